"""Extern stages (`sl.extern` with `sl.call_packed`): a function outside schedlang computes a
tensor whole, before the kernel that reads it; checked against numpy on random data, with
symbolic sizes and outputs poisoned with NaN, and every way such a schedule is refused."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.errors import PlacementError

RNG = np.random.default_rng(7)


def _matmul_then_bias(n, l, m):
    """C = A @ B by the BLAS behind numpy, then D = C + bias, computed by schedlang."""
    a = sl.placeholder((n, l), name="A")
    b = sl.placeholder((l, m), name="B")
    c = sl.extern(
        (n, m),
        [a, b],
        lambda ins, outs: sl.call_packed("blas.matmul", ins[0], ins[1], outs[0], False, False),
        name="C",
    )
    bias = sl.var("bias", "float32")
    d = sl.compute(c.shape, lambda i, j: c[i, j] + bias, name="D")
    return a, b, c, bias, d


def _random(*shape):
    return RNG.uniform(-1, 1, shape).astype("float32")


def test_the_reference_calls_the_function():
    a, b, _, bias, d = _matmul_then_bias(9, 5, 7)
    x, y = _random(9, 5), _random(5, 7)
    got = sl.reference(d, {a: x, b: y, bias: 2.5})
    np.testing.assert_allclose(got, x @ y + 2.5, rtol=1e-5)


def test_a_kernel_reads_the_call_result_at_symbolic_sizes():
    n, m = sl.var("n"), sl.var("m")
    a, b, c, bias, d = _matmul_then_bias(n, 13, m)
    s = sl.create_schedule(d.op)
    outer, inner = s[d].split(d.op.axis[1], factor=4)
    s[d].vectorize(inner)
    kernel = sl.build(s, [a, b, d, bias])
    for rows, cols in ((7, 9), (33, 5)):
        x, y = _random(rows, 13), _random(13, cols)
        out = np.full((rows, cols), np.nan, "float32")
        kernel(x, y, out, -1.25)
        np.testing.assert_allclose(out, x @ y - 1.25, rtol=1e-5, atol=1e-6)


def test_a_registered_python_function_writes_the_output_in_place():
    seen = []

    def halve_and_shift(x, y, shift):
        seen.append((type(x), type(y), shift))
        y[...] = x / 2 + shift

    sl.register_func("test_extern.halve_and_shift", halve_and_shift, override=True)
    a = sl.placeholder((11,), name="A")
    h = sl.extern(
        a.shape,
        [a],
        lambda ins, outs: sl.call_packed("test_extern.halve_and_shift", ins[0], outs[0], 3.0),
        name="H",
    )
    kernel = sl.build(sl.create_schedule(h.op), [a, h])
    x, y = _random(11), np.full(11, np.nan, "float32")
    kernel(x, y)
    np.testing.assert_allclose(y, x / 2 + 3.0, rtol=1e-6)
    assert seen == [(np.ndarray, np.ndarray, 3.0)]


def test_arrays_of_the_wrong_shape_are_refused_before_any_call():
    a, b, _, bias, d = _matmul_then_bias(5, 3, 4)
    kernel = sl.build(sl.create_schedule(d.op), [a, b, d, bias])
    with pytest.raises(ValueError, match="dimension 0 of 'D' must be 5, but its array has 4"):
        kernel(_random(5, 3), _random(3, 4), np.zeros((4, 5), "float32"), 1.0)
    a = sl.placeholder((6,), name="A")
    c = sl.extern(a.shape, [a], lambda ins, outs: sl.call_packed("blas.matmul", ins[0], outs[0]))
    kernel = sl.build(sl.create_schedule(c.op), [a, c])
    with pytest.raises(ValueError, match="dimension 0 of 'extern' must be 6, but its array has 5"):
        kernel(_random(6), np.zeros(5, "float32"))


def test_an_extern_reads_another_extern():
    a = sl.placeholder((6, 6), name="A")
    call = lambda ins, outs: sl.call_packed("blas.matmul", ins[0], ins[0], outs[0])  # noqa: E731
    sq = sl.extern((6, 6), [a], call, name="Sq")
    quad = sl.extern((6, 6), [sq], call, name="Quad")
    kernel = sl.build(sl.create_schedule(quad.op), [a, quad])
    x, out = _random(6, 6), np.full((6, 6), np.nan, "float32")
    kernel(x, out)
    np.testing.assert_allclose(out, np.linalg.matrix_power(x, 4), rtol=1e-4, atol=1e-6)


def test_lower_shows_the_call_before_the_loop_nest():
    a, b, _, bias, d = _matmul_then_bias(8, 4, 8)
    text = str(sl.lower(sl.create_schedule(d.op), [a, b, d, bias]))
    call, nest = text.split("\n", 1)
    assert call == "C = blas.matmul(A, B, C, False, False)  # extern, on the host"
    assert nest.startswith("def main(D: float32[8, 8], bias: float32[], C: float32[8, 8]):")
    assert "D[i, j] = C[i, j] + bias[]" in nest


def test_a_call_reads_stages_a_kernel_computes_before_it():
    a = sl.placeholder((7, 7), name="A")
    twice = sl.compute(a.shape, lambda i, j: a[i, j] * 2, name="Twice")
    square = sl.extern(
        a.shape, [twice], lambda ins, outs: sl.call_packed("blas.matmul", ins[0], ins[0], outs[0])
    )
    shifted = sl.compute(a.shape, lambda i, j: square[i, j] - 1, name="Shifted")
    s = sl.create_schedule(shifted.op)
    s[twice].split(twice.op.axis[1], factor=3)
    x = _random(7, 7)
    expected = (2 * x) @ (2 * x) - 1
    np.testing.assert_allclose(sl.reference(shifted, {a: x}), expected, rtol=1e-5, atol=1e-5)
    out, kept = np.full((7, 7), np.nan, "float32"), np.full((7, 7), np.nan, "float32")
    sl.build(s, [a, shifted, twice])(x, out, kept)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(kept, 2 * x)
    text = str(sl.lower(s, [a, shifted]))
    assert text.index("Twice[") < text.index("blas.matmul") < text.index("Shifted[")
    assert "range(0, 3)" in text.split("blas.matmul")[0]  # the split replayed


def test_a_zero_dimensional_result_is_written_into_the_callers_array():
    def copy(x, y):
        y[...] = x * 2

    sl.register_func("tests.double_scalar", copy, override=True)
    a = sl.placeholder((), name="A")
    b = sl.extern((), [a], lambda ins, outs: sl.call_packed("tests.double_scalar", ins[0], outs[0]))
    out = np.full((), np.nan, "float32")
    sl.build(sl.create_schedule(b.op), [a, b])(np.array(1.25, "float32"), out)
    assert out == 2.5


def test_an_extern_stage_has_no_loops_to_schedule():
    _, _, c, _, d = _matmul_then_bias(8, 4, 8)
    s = sl.create_schedule(d.op)
    with pytest.raises(PlacementError, match="'C' is an extern stage .*'blas.matmul'"):
        s[c].compute_at(s[d], d.op.axis[0])


def test_what_cannot_run_is_refused_at_build():
    a, b, c, bias, d = _matmul_then_bias(8, 4, 8)
    with pytest.raises(sl.LoweringError, match="calls 'blas.matmul' on the host; build for"):
        sl.build(sl.create_schedule(d.op), [a, b, d, bias], target="cuda")
    twice = sl.compute(a.shape, lambda i, j: a[i, j] * 2, name="Twice")
    late = sl.extern(
        a.shape, [twice], lambda ins, outs: sl.call_packed("blas.matmul", ins[0], ins[0], outs[0])
    )
    again = sl.compute(a.shape, lambda i, j: late[i, j] + twice[i, j], name="Again")
    after = sl.extern(
        a.shape, [again], lambda ins, outs: sl.call_packed("blas.matmul", ins[0], ins[0], outs[0])
    )
    with pytest.raises(sl.LoweringError, match="'Again' is computed from '.*': a computed stage"):
        sl.build(sl.create_schedule(after.op), [a, after])
    nowhere = sl.extern(a.shape, [a], lambda ins, outs: sl.call_packed("no.such", ins[0], outs[0]))
    with pytest.raises(sl.LoweringError, match="no function is registered as 'no.such'"):
        sl.build(sl.create_schedule(nowhere.op), [a, nowhere])


def test_a_call_with_two_outputs_is_one_stage_that_writes_both():
    def split_signs(x, pos, neg):
        pos[...] = np.maximum(x, 0)
        neg[...] = np.minimum(x, 0).sum(axis=1)

    sl.register_func("tests.split_signs", split_signs, override=True)
    n = sl.var("n")
    a = sl.placeholder((n, 5), name="A")
    pos, neg = sl.extern(
        [a.shape, (n,)],
        [a],
        lambda ins, outs: sl.call_packed("tests.split_signs", ins[0], outs[0], outs[1]),
        name="signs",
    )
    assert (pos.value_index, neg.value_index, pos.op.num_outputs) == (0, 1, 2)
    both = sl.compute((n,), lambda i: pos[i, 2] - neg[i], name="Both")
    s = sl.create_schedule(both.op)
    assert s[pos] is s[neg]
    x = _random(7, 5)
    expected = np.maximum(x[:, 2], 0) - np.minimum(x, 0).sum(axis=1)
    np.testing.assert_allclose(sl.reference(both, {a: x}), expected, rtol=1e-6)
    got, kept = np.full(7, np.nan, "float32"), np.full(7, np.nan, "float32")
    sl.build(s, [a, both, neg])(x, got, kept)
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(kept, np.minimum(x, 0).sum(axis=1), rtol=1e-6)


def test_malformed_externs_are_refused_when_written():
    a = sl.placeholder((4,), name="A")
    with pytest.raises(sl.AlgorithmError, match="must return sl.call_packed"):
        sl.extern(a.shape, [a], lambda ins, outs: ins[0])
    with pytest.raises(sl.AlgorithmError, match="2 shapes but 3 dtypes"):
        sl.extern([(4,), (4,)], [a], lambda i, o: None, dtype=["int32"] * 3)
    with pytest.raises(sl.AlgorithmError, match="give dtype="):
        sl.extern((4,), [], lambda ins, outs: sl.call_packed("blas.matmul", outs[0]))


def test_a_scalar_that_is_neither_a_constant_nor_a_parameter_is_refused_at_the_call():
    a = sl.placeholder((4,), name="A")
    scale = sl.var("scale", "float32")
    odd = sl.extern(
        a.shape, [a], lambda ins, outs: sl.call_packed("blas.matmul", ins[0], scale * 2, outs[0])
    )
    with pytest.raises(sl.LoweringError, match="scalars must be constants or scalar parameters"):
        sl.reference(odd, {a: _random(4), scale: 1.0})


def test_the_registry():
    @sl.register_func
    def test_extern_named_after_itself(x):
        return x

    assert sl.get_global_func("test_extern_named_after_itself") is test_extern_named_after_itself
    with pytest.raises(sl.LoweringError, match="already registered .* override=True"):
        sl.register_func("test_extern_named_after_itself", print)
    assert sl.get_global_func("test_extern.missing", allow_missing=True) is None
    with pytest.raises(sl.LoweringError, match="no function is registered"):
        sl.get_global_func("test_extern.missing")
