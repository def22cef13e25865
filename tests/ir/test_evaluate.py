"""The numpy reference evaluator: reductions, sizes, multi-stage graphs, precision."""

from __future__ import annotations

import time

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import evaluate as evaluate_module

from .util import assert_matches, random_array, rng


def _matmul():
    M, K, N = sl.var("M"), sl.var("K"), sl.var("N")
    A = sl.placeholder((M, K), name="A")
    B = sl.placeholder((K, N), name="B")
    k = sl.reduce_axis((0, K), name="k")
    C = sl.compute((M, N), lambda i, j: sl.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k


def test_matmul_matches_numpy():
    A, B, C, _ = _matmul()
    gen = rng()
    a, b = random_array(gen, (13, 31)), random_array(gen, (31, 7))
    exact = a.astype("float64") @ b
    assert_matches(sl.evaluate(C, {A: a, B: b}), exact.astype("float32"), rtol=1e-5)


def test_matmul_256_is_fast():
    A, B, C, _ = _matmul()
    gen = rng()
    a, b = random_array(gen, (256, 256)), random_array(gen, (256, 256))
    start = time.perf_counter()
    c = sl.evaluate(C, {A: a, B: b})
    elapsed = time.perf_counter() - start
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-3)
    assert elapsed < 1.0, f"256^3 matmul took {elapsed:.2f} s"


def test_reduction_outside_the_einsum_path():
    A, B, _, k = _matmul()
    C = sl.compute((A.shape[0], B.shape[1]), lambda i, j: sl.sum(A[i, k] * B[k, j] + 1.0, axis=k))
    gen = rng()
    a, b = random_array(gen, (13, 5)), random_array(gen, (5, 7))
    assert_matches(sl.evaluate(C, {A: a, B: b}), a @ b + np.float32(5))


def test_einsum_path_agrees_with_the_general_path():
    A, B, C, k = _matmul()
    slow = sl.compute(C.shape, lambda i, j: sl.sum(A[i, k] * 1.0 * B[k, j], axis=k))
    gen = rng()
    a, b = random_array(gen, (31, 13)), random_array(gen, (13, 7))
    fast_value, slow_value = sl.reference([C, slow], {A: a, B: b})
    np.testing.assert_allclose(fast_value, slow_value, rtol=1e-5, atol=1e-5)


def test_sum_over_an_axis_that_no_factor_reads():
    A = sl.placeholder((7,), name="A")
    k = sl.reduce_axis(5, name="k")
    B = sl.compute((7,), lambda i: sl.sum(A[i], axis=k), name="B")
    C = sl.compute((7,), lambda i: sl.sum(A[i] * A[k], axis=k), name="C")
    a = random_array(rng(), (7,))
    b, c = sl.reference([B, C], {A: a})
    assert_matches(b, a * np.float32(5))
    assert_matches(c, a * a[:5].sum(dtype="float32"))


def test_reduction_with_where():
    A = sl.placeholder((13, 5), name="A")
    k = sl.reduce_axis(5, name="k")
    lower = sl.compute((13,), lambda i: sl.sum(A[i, k], axis=k, where=k <= i % 5), name="L")
    positive = sl.compute((13,), lambda i: sl.max(A[i, k], axis=k, where=A[i, k] > 0))
    a = random_array(rng(), (13, 5))
    mask = np.arange(5)[None, :] <= (np.arange(13) % 5)[:, None]
    assert_matches(sl.evaluate(lower, {A: a}), np.where(mask, a, 0).sum(axis=1))
    expected = np.where(a > 0, a, np.finfo("float32").min).max(axis=1)
    assert_matches(sl.evaluate(positive, {A: a}), expected)


def test_reduction_over_several_axes():
    A = sl.placeholder((7, 13, 5), name="A")
    k1, k2 = sl.reduce_axis(13, name="k1"), sl.reduce_axis(5, name="k2")
    B = sl.compute((7,), lambda i: sl.sum(A[i, k1, k2] * A[i, k1, k2], axis=[k1, k2]), name="B")
    r1, r2 = sl.reduce_axis(7, name="r1"), sl.reduce_axis(13, name="r2")
    C = sl.compute((5,), lambda j: sl.max(A[r1, r2, j] - A[r1, 0, j], axis=[r2, r1]), name="C")
    a = random_array(rng(), (7, 13, 5))
    assert B.op.reduce_axis == (k1, k2) and C.op.reduce_axis == (r2, r1)
    assert_matches(sl.evaluate(B, {A: a}), (a * a).sum(axis=(1, 2)), rtol=1e-5)
    assert_matches(sl.evaluate(C, {A: a}), (a - a[:, :1, :]).max(axis=(0, 1)))


def test_reduce_axis_with_a_nonzero_lower_bound():
    n = sl.var("n")
    A = sl.placeholder((n, 7), name="A")
    B = sl.placeholder((7,), name="B")
    k = sl.reduce_axis((2, 7), name="k")
    dot = sl.compute((n,), lambda i: sl.sum(A[i, k] * B[k], axis=k), name="dot")
    shifted = sl.compute((n,), lambda i: sl.sum(A[i, k - 2] + 0.5, axis=k), name="shifted")
    m = sl.reduce_axis((1, n), name="m")
    tail = sl.compute((7,), lambda j: sl.min(A[m, j], axis=m), name="tail")
    gen = rng()
    a, b = random_array(gen, (13, 7)), random_array(gen, (7,))
    got = sl.reference([dot, shifted, tail], {A: a, B: b})
    assert_matches(got[0], a[:, 2:] @ b[2:])
    assert_matches(got[1], (a[:, :5] + np.float32(0.5)).sum(axis=1))
    assert_matches(got[2], a[1:].min(axis=0))


@pytest.mark.parametrize("dtype", ["float32", "int32", "int64", "float64"])
@pytest.mark.parametrize(
    "reducer, fn", [(sl.sum, np.sum), (sl.max, np.max), (sl.min, np.min), (sl.prod, np.prod)]
)
def test_max_min_prod_sum(reducer, fn, dtype):
    A = sl.placeholder((13, 5), dtype, name="A")
    k = sl.reduce_axis(13, name="k")
    a = random_array(rng(), (13, 5), dtype, -3, 3, nonzero=True)
    T = sl.compute((5,), lambda j: reducer(A[k, j], axis=k), name=reducer.name)
    assert T.dtype == dtype
    assert_matches(sl.evaluate(T, {A: a}), fn(a, axis=0).astype(dtype), rtol=1e-5)


def test_max_over_bools_is_any():
    A = sl.placeholder((13, 5), name="A")
    k = sl.reduce_axis(5, name="k")
    B = sl.compute((13,), lambda i: sl.max(A[i, k] > 1, axis=k), name="B")
    a = random_array(rng(), (13, 5))
    assert_matches(sl.evaluate(B, {A: a}), (a > 1).any(axis=1))


def test_comm_reducer_max_abs():
    max_abs = sl.comm_reducer(
        lambda x, y: sl.maximum(sl.abs(x), sl.abs(y)), lambda t: sl.const(0, t), name="max_abs"
    )
    A = sl.placeholder((13, 31), name="A")
    k = sl.reduce_axis(31, name="k")
    B = sl.compute((13,), lambda i: max_abs(A[i, k], axis=k), name="B")
    a = random_array(rng(), (13, 31))
    assert_matches(sl.evaluate(B, {A: a}), np.abs(a).max(axis=1))
    assert str(B) == "B[i] = max_abs(A[i, k], k in [0, 31))"


def test_comm_reducer_with_a_select_combiner():
    # Keeps the value of largest magnitude, with its sign: not one of numpy's reductions.
    largest = sl.comm_reducer(
        lambda x, y: sl.if_then_else(sl.abs(x) > sl.abs(y), x, y), lambda t: 0.0, name="largest"
    )
    A = sl.placeholder((7, 13), name="A")
    k = sl.reduce_axis(13, name="k")
    B = sl.compute((7,), lambda i: largest(A[i, k], axis=k), name="B")
    a = random_array(rng(), (7, 13))
    expected = a[np.arange(7), np.abs(a).argmax(axis=1)]
    assert_matches(sl.evaluate(B, {A: a}), expected)


def test_comm_reducer_with_an_arithmetic_combiner():
    # x * y + x + y = (1 + x)(1 + y) - 1: commutative, associative, identity 0.
    combine = sl.comm_reducer(lambda x, y: x * y + x + y, lambda t: 0, name="shifted_prod")
    A = sl.placeholder((5, 13), "int64", name="A")
    k = sl.reduce_axis(13, name="k")
    j = sl.reduce_axis((1, 5), name="j")
    B = sl.compute((5,), lambda i: combine(A[i, k], axis=k), name="B")
    C = sl.compute((13,), lambda m: combine(A[j, m], axis=j, where=A[j, m] != 1), name="C")
    a = random_array(rng(), (5, 13), "int64", -2, 2)
    assert_matches(sl.evaluate(B, {A: a}), (1 + a).prod(axis=1) - 1)
    masked = np.where(a[1:] != 1, a[1:], 0)
    assert_matches(sl.evaluate(C, {A: a}), (1 + masked).prod(axis=0) - 1)


def test_elementwise_max_min_of_two_expressions():
    gen = rng()
    A, B = sl.placeholder((13, 5), name="A"), sl.placeholder((13, 5), name="B")
    a, b = random_array(gen, (13, 5)), random_array(gen, (13, 5))
    big = sl.compute((13, 5), lambda i, j: sl.max(A[i, j], B[i, j]), name="big")
    small = sl.compute((13, 5), lambda i, j: sl.min(A[i, j], 0.5), name="small")
    both = sl.compute((13, 5), lambda i, j: sl.sum(A[i, j], B[i, j]), name="both")
    got = sl.reference([big, small, both], {A: a, B: b})
    assert_matches(got[0], np.maximum(a, b))
    assert_matches(got[1], np.minimum(a, np.float32(0.5)))
    assert_matches(got[2], a + b)
    assert big.op.reduce_axis == ()
    I8 = sl.placeholder((3,), "int8", name="I8")
    assert sl.max(I8[0], 1).dtype == "int8"


def test_sizes_are_read_off_the_arrays():
    n, m = sl.var("n"), sl.var("m")
    A = sl.placeholder((n, m), name="A")
    P = sl.placeholder((n + 2,), name="P")
    B = sl.compute((n, m), lambda i, j: A[i, j] * (P[i] + P[i + 2]), name="B")
    gen = rng()
    a, p = random_array(gen, (13, 5)), random_array(gen, (15,))
    assert_matches(sl.evaluate(B, {A: a, P: p}), a * (p[:-2] + p[2:])[:, None])
    Q = sl.placeholder((2 * n + 1,), name="Q")
    C = sl.compute((n,), lambda i: Q[2 * i + 1], name="C")
    q = random_array(gen, (31,))
    assert_matches(sl.evaluate(C, {Q: q}), q[1::2])


def test_mismatching_sizes_raise_value_error():
    n = sl.var("n")
    A = sl.placeholder((n,), name="A")
    P = sl.placeholder((n + 2,), name="P")
    B = sl.compute((n,), lambda i: A[i] + P[i], name="B")
    gen = rng()
    a = random_array(gen, (7,))
    with pytest.raises(
        ValueError, match=r"dimension 0 of 'P' is n \+ 2 = 9 with n=7, but its array has 8"
    ):
        sl.evaluate(B, {A: a, P: random_array(gen, (8,))})
    C = sl.compute((n,), lambda i: A[i] + A[i] * 2.0, name="C")
    D = sl.placeholder((n,), name="D")
    E = sl.compute((n,), lambda i: C[i] + D[i], name="E")
    with pytest.raises(
        ValueError, match="size 'n' is 7 from an earlier array but 5 from dimension 0 of 'D'"
    ):
        sl.evaluate(E, {A: a, D: random_array(gen, (5,))})
    F = sl.placeholder((5, 3), name="F")
    G = sl.compute((5, 3), lambda i, j: F[i, j], name="G")
    with pytest.raises(ValueError, match=r"dimension 1 of 'F' must be 3, but its array has 4"):
        sl.evaluate(G, {F: random_array(gen, (5, 4))})
    with pytest.raises(
        ValueError, match=r"'F' has 2 dimension\(s\) but its array has shape \(15,\)"
    ):
        sl.evaluate(G, {F: random_array(gen, (15,))})
    Q = sl.placeholder((2 * n,), name="Q")
    with pytest.raises(ValueError, match=r"'n' cannot be read off the size 7"):
        sl.evaluate(sl.compute((n,), lambda i: Q[i]), {Q: random_array(gen, (7,))})


def test_wrong_dtype_raises_type_error():
    A = sl.placeholder((7,), name="A")
    B = sl.compute((7,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(TypeError, match=r"placeholder 'A' is float32 but its array is float64"):
        sl.evaluate(B, {A: random_array(rng(), (7,), "float64")})
    I = sl.placeholder((7,), "int32", name="I")
    with pytest.raises(TypeError, match=r"'I' is int32 but its array is int64.*astype\('int32'\)"):
        sl.evaluate(sl.compute((7,), lambda i: I[i] + 1), {I: np.arange(1, 8, dtype="int64")})


def test_missing_placeholder_raises_algorithm_error():
    A, B, C, _ = _matmul()
    with pytest.raises(sl.AlgorithmError, match="no array given for placeholder 'B'"):
        sl.evaluate(C, {A: random_array(rng(), (7, 5))})
    with pytest.raises(sl.AlgorithmError, match="'C' is not a placeholder"):
        sl.evaluate(C, {C: random_array(rng(), (7, 5))})


def test_sizes_argument_for_a_size_no_array_shows():
    n, m = sl.var("n"), sl.var("m")
    A = sl.placeholder((n,), name="A")
    B = sl.compute((n, m), lambda i, j: A[i] * j.astype("float32"), name="B")
    a = random_array(rng(), (7,))
    with pytest.raises(
        ValueError,
        match=r"size 'm' of 'B' is not the size of any input array; pass it as sizes=\{m: value\}",
    ):
        sl.evaluate(B, {A: a})
    assert_matches(sl.evaluate(B, {A: a}, sizes={m: 5}), a[:, None] * np.arange(5, dtype="float32"))
    k = sl.reduce_axis((0, m), name="k")
    C = sl.compute((n,), lambda i: sl.sum(A[i] + k.astype("float32"), axis=k), name="C")
    with pytest.raises(ValueError, match="size 'm' of 'C' is not the size of any input array"):
        sl.evaluate(C, {A: a})
    assert_matches(sl.evaluate(C, {A: a}, sizes={m: 4}), a * np.float32(4) + np.float32(6))
    with pytest.raises(ValueError, match="size 'n' is 6 from an earlier array but 7"):
        sl.evaluate(C, {A: a}, sizes={n: 6, m: 4})


def test_two_stage_blur():
    H, W = sl.var("H"), sl.var("W")
    image = sl.placeholder((H + 2, W + 2), name="image")
    blur_x = sl.compute(
        (H + 2, W),
        lambda y, x: (image[y, x] + image[y, x + 1] + image[y, x + 2]) / 3.0,
        name="blur_x",
    )
    blur_y = sl.compute(
        (H, W),
        lambda y, x: (blur_x[y, x] + blur_x[y + 1, x] + blur_x[y + 2, x]) / 3.0,
        name="blur_y",
    )
    img = random_array(rng(), (15, 33), "float32", 0, 1)
    third = np.float32(3.0)
    bx = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / third
    by = (bx[:-2] + bx[1:-1] + bx[2:]) / third
    got_x, got_y = sl.reference([blur_x, blur_y], {image: img})
    assert_matches(got_x, bx)
    assert_matches(got_y, by)
    assert blur_y.op.input_tensors == (blur_x,)


def test_softmax_in_four_computes():
    n, m = sl.var("n"), sl.var("m")
    X = sl.placeholder((n, m), name="X")
    k = sl.reduce_axis((0, m), name="k")
    row_max = sl.compute((n,), lambda i: sl.max(X[i, k], axis=k), name="row_max")
    e = sl.compute((n, m), lambda i, j: sl.exp(X[i, j] - row_max[i]), name="e")
    k2 = sl.reduce_axis((0, m), name="k2")
    total = sl.compute((n,), lambda i: sl.sum(e[i, k2], axis=k2), name="total")
    softmax = sl.compute((n, m), lambda i, j: e[i, j] / total[i], name="softmax")
    x = random_array(rng(), (13, 31), "float32", -10, 10)
    shifted = np.exp(x.astype("float64") - x.max(axis=1, keepdims=True))
    expected = shifted / shifted.sum(axis=1, keepdims=True)
    result = sl.evaluate(softmax, {X: x})
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(result.sum(axis=1), 1, rtol=1e-5)


def test_reference_of_several_outputs_and_of_one():
    A, B, C, _ = _matmul()
    D = sl.compute(C.shape, lambda i, j: C[i, j] + 1.0, name="D")
    gen = rng()
    a, b = random_array(gen, (7, 5)), random_array(gen, (5, 3))
    both = sl.reference([C, D], {A: a, B: b})
    assert isinstance(both, list) and len(both) == 2
    assert_matches(both[1], a @ b + np.float32(1))
    single = sl.reference(D, {A: a, B: b})
    assert isinstance(single, np.ndarray)
    assert_matches(single, both[1])


def test_float32_is_evaluated_in_float32_by_default():
    A = sl.placeholder((7,), name="A")
    B = sl.compute((7,), lambda i: A[i] + 1e-8, name="B")
    C = sl.compute((7,), lambda i: B[i] - A[i], name="C")
    a = random_array(rng(), (7,), "float32", 1, 2)
    default = sl.evaluate(C, {A: a})
    assert default.dtype == np.float32
    assert (default == 0).all()  # 1e-8 is lost in float32 next to values in [1, 2]
    wide = sl.evaluate(C, {A: a}, precision="float64")
    assert wide.dtype == np.float64
    np.testing.assert_allclose(wide, 1e-8, rtol=1e-6)


def test_precision_float64_is_closer_to_exact():
    A = sl.placeholder((13, 997), name="A")
    k = sl.reduce_axis(997, name="k")
    S = sl.compute((13,), lambda i: sl.sum(sl.exp(A[i, k]) * 0.1, axis=k), name="S")
    a = random_array(rng(), (13, 997), "float32", -3, 3)
    exact = (np.exp(a.astype("float64")) * 0.1).sum(axis=1)
    single = sl.evaluate(S, {A: a})
    double = sl.evaluate(S, {A: a}, precision="float64")
    assert single.dtype == np.float32 and double.dtype == np.float64
    error_single = np.abs(single - exact).max()
    error_double = np.abs(double - exact).max()
    assert error_double < 1e-10 < error_single
    with pytest.raises(ValueError, match="precision must be None or 'float64'"):
        sl.evaluate(S, {A: a}, precision="float16")


def test_precision_float64_leaves_integers_alone():
    I = sl.placeholder((7,), "int16", name="I")
    B = sl.compute((7,), lambda i: I[i] * 3 + i.astype("int16"), name="B")
    i = random_array(rng(), (7,), "int16", -100, 100)
    assert_matches(sl.evaluate(B, {I: i}, precision="float64"), i * 3 + np.arange(7, dtype="int16"))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_inputs(dtype):
    A = sl.placeholder((13, 5), dtype, name="A")
    k = sl.reduce_axis(5, name="k")
    B = sl.compute((13,), lambda i: sl.sum(A[i, k] * A[i, k], axis=k), name="B")
    C = sl.compute((13,), lambda i: sl.sum(A[i, k] * A[i, k], axis=k, where=k > 0), name="C")
    a = random_array(rng(), (13, 5), dtype, -2, 2)
    expected = (a.astype("float64") ** 2).sum(axis=1)
    for T, want in ((B, expected), (C, expected - a[:, 0].astype("float64") ** 2)):
        result = sl.evaluate(T, {A: a})
        assert result.dtype == a.dtype
        np.testing.assert_allclose(result.astype("float64"), want, rtol=3e-2, atol=3e-2)
        wide = sl.evaluate(T, {A: a}, precision="float64")
        np.testing.assert_allclose(wide, want, rtol=1e-12)


def test_evaluation_in_row_chunks(monkeypatch):
    monkeypatch.setattr(evaluate_module, "GRID_LIMIT", 64)
    A = sl.placeholder((31, 13), name="A")
    k = sl.reduce_axis(13, name="k")
    B = sl.compute((31,), lambda i: sl.sum(A[i, k] * A[i, k] + 1.0, axis=k), name="B")
    C = sl.compute((31, 13), lambda i, j: A[i, j] * 2.0 + i.astype("float32"), name="C")
    a = random_array(rng(), (31, 13))
    b, c = sl.reference([B, C], {A: a})
    assert_matches(b, (a * a + np.float32(1)).sum(axis=1))
    assert_matches(c, a * np.float32(2) + np.arange(31, dtype="float32")[:, None])
    D = sl.compute((31,), lambda i: A[i + 1, 0], name="D")
    with pytest.raises(sl.AlgorithmError, match=r"at i=30 it reads A\[31, 0\]"):
        sl.evaluate(D, {A: a})


def test_zero_dimensional_compute():
    A = sl.placeholder((31,), name="A")
    k = sl.reduce_axis(31, name="k")
    total = sl.compute((), lambda: sl.sum(A[k], axis=k), name="total")
    a = random_array(rng(), (31,))
    result = sl.evaluate(total, {A: a})
    assert result.shape == ()
    assert_matches(result, a.sum())
