"""The CPU kernel's guard (`codegen.cpu.trampoline`): the usual call checked in machine code, and
every other call taken by the general path with the same result or the same error.

Outputs are poisoned with NaN; every case is compared with numpy or with what the general path
(`arguments.check_arguments`) says of the same arguments.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlang as sl
from schedlang.codegen.cpu.trampoline import array_layout
from schedlang.runtime.arguments import check_arguments


def _add(m, n, dtype="float32"):
    a = sl.placeholder((m, n), dtype, name="A")
    b = sl.placeholder((m, n), dtype, name="B")
    c = sl.compute((m, n), lambda i, j: a[i, j] + b[i, j], name="C")
    return sl.build(sl.create_schedule(c.op), [a, b, c], target="cpu")


def _general(kernel, *arrays, **sizes):
    """The call as the general path makes it."""
    kernel._run(check_arguments(kernel.lowered, kernel._written, arrays, sizes, kernel._limits))


def test_numpy_keeps_its_fields_where_its_c_api_says():
    assert array_layout() is not None


@pytest.mark.parametrize("m", [5, sl.var("m")], ids=["constant", "symbolic"])
def test_the_usual_call_runs_through_the_guard(m):
    kernel = _add(m, 7)
    assert kernel._guard is not None
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (2, 5, 7)).astype(np.float32)
    c = np.full((5, 7), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_a_kernel_whose_shapes_are_expressions_has_no_guard_and_still_runs():
    n = sl.var("n")
    a = sl.placeholder((n + 2,), name="A")
    c = sl.compute((n,), lambda i: a[i] + a[i + 2], name="C")
    kernel = sl.build(sl.create_schedule(c.op), [a, c], target="cpu")
    assert kernel._guard is None
    x = np.arange(9, dtype=np.float32)
    y = np.full(7, np.nan, np.float32)
    kernel(x, y)
    np.testing.assert_array_equal(y, x[:-2] + x[2:])


def _unusual_cases():
    """Calls the guard must hand to the general path: (name, arrays maker, expected error)."""
    good = lambda: np.ones((5, 7), np.float32)  # noqa: E731
    base = np.ones((5, 14), np.float32)
    read_only = good()
    read_only.setflags(write=False)
    return [
        ("a float64 input", lambda: (good().astype(np.float64), good(), good()), TypeError),
        ("a 1-d input", lambda: (np.ones(35, np.float32), good(), good()), ValueError),
        ("shapes that disagree", lambda: (np.ones((5, 6), np.float32), good(), good()), ValueError),
        ("a strided input (copied)", lambda: (base[:, ::2], good(), good()), None),
        (
            "a transposed input (copied)",
            lambda: (np.ones((7, 5), np.float32).T, good(), good()),
            None,
        ),
        ("a strided output", lambda: (good(), good(), base[:, ::2]), ValueError),
        ("a read-only output", lambda: (good(), good(), read_only), ValueError),
        ("an output that is an input", lambda: _same(), ValueError),
        ("an output over an input", lambda: _halves(overlap=True), ValueError),
        ("disjoint views of one array", lambda: _halves(overlap=False), None),
        ("a list", lambda: (good().tolist(), good(), good()), TypeError),
        ("a subclass of ndarray", lambda: (good().view(_Sub), good(), good()), None),
        ("one array", lambda: (good(),), TypeError),
    ]


class _Sub(np.ndarray):
    pass


def _same():
    a = np.ones((5, 7), np.float32)
    return a, np.ones((5, 7), np.float32), a


def _halves(overlap: bool):
    big = np.ones((10, 7), np.float32)
    return big[:5], np.ones((5, 7), np.float32), big[4:9] if overlap else big[5:]


@pytest.mark.parametrize(
    ("name", "make", "error"), _unusual_cases(), ids=[case[0] for case in _unusual_cases()]
)
def test_the_guard_hands_every_other_call_to_the_general_path(name, make, error):
    kernel = _add(5, 7)
    if error is not None:
        with pytest.raises(error) as raised:
            kernel(*make())
        with pytest.raises(error) as expected:
            _general(kernel, *make())
        assert str(raised.value) == str(expected.value)
        return
    arrays = make()
    arrays[-1][...] = np.nan
    kernel(*arrays)
    np.testing.assert_array_equal(arrays[-1], np.asarray(arrays[0]) + arrays[1])


def test_a_size_past_its_dtype_is_refused_as_before():
    n = sl.var("n", dtype="int8")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 2.0, name="C")
    kernel = sl.build(sl.create_schedule(c.op), [a, c], target="cpu")
    small = np.ones(100, np.float32)
    out = np.full(100, np.nan, np.float32)
    kernel(small, out)
    np.testing.assert_array_equal(out, 2.0)
    with pytest.raises(ValueError, match="does not fit int8"):
        kernel(np.ones(200, np.float32), np.empty(200, np.float32))


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(0, 6),
    cols=st.integers(0, 6),
    dtype=st.sampled_from(["float32", "float64", "int32"]),
    layout=st.sampled_from(["c", "f", "strided", "view"]),
    out_layout=st.sampled_from(["c", "f", "view", "alias"]),
)
def test_the_guard_and_the_general_path_agree(rows, cols, dtype, layout, out_layout):
    """Random shapes (zero included), dtypes and layouts: the same result or the same error."""
    kernel = _add(sl.var("m"), sl.var("n"))

    def make():
        rng = np.random.default_rng(rows * 7 + cols)
        a = rng.uniform(-1, 1, (rows, cols)).astype(dtype)
        if layout == "f":
            a = np.asfortranarray(a)
        elif layout == "strided":
            a = np.repeat(a, 2, axis=1)[:, ::2]
        elif layout == "view":
            a = np.concatenate([a, a])[rows:]
        b = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
        c = np.full((rows, cols), np.nan, np.float32)
        if out_layout == "f":
            c = np.asfortranarray(c)
        elif out_layout == "view":
            c = np.full((2 * rows, cols), np.nan, np.float32)[rows:]
        elif out_layout == "alias":
            c = b
        return a, b, c

    outcomes = []
    for call in (kernel, lambda *xs: _general(kernel, *xs)):
        arrays = make()
        try:
            call(*arrays)
            outcomes.append(("ran", arrays[-1].tolist()))
        except (TypeError, ValueError) as error:
            outcomes.append((type(error).__name__, str(error)))
    assert outcomes[0] == outcomes[1]


def test_called_with_its_inputs_alone_a_kernel_makes_and_returns_its_outputs():
    kernel = _add(sl.var("m"), 7)
    rng = np.random.default_rng(1)
    a, b = rng.uniform(-1, 1, (2, 4, 7)).astype(np.float32)
    c = kernel(a, b)
    assert isinstance(c, np.ndarray) and c.shape == (4, 7) and c.dtype == np.float32
    np.testing.assert_array_equal(c, a + b)
    assert kernel(a, b, np.empty_like(a)) is None  # outputs passed: written in place


def test_several_outputs_come_back_as_a_tuple_in_args_order():
    a = sl.placeholder((5,), name="A")
    total = sl.compute((5,), lambda i: a[i] + 1.0, name="Total")
    double = sl.compute((5,), lambda i: a[i] * 2.0, name="Double")
    s = sl.create_schedule([total.op, double.op])
    kernel = sl.build(s, [double, a, total], target="cpu")
    x = np.arange(5, dtype=np.float32)
    got = kernel(x)
    assert isinstance(got, tuple) and len(got) == 2
    np.testing.assert_array_equal(got[0], 2 * x)
    np.testing.assert_array_equal(got[1], x + 1)


def test_an_output_whose_size_no_input_shows_must_be_passed():
    n = sl.var("n")
    a = sl.placeholder((4,), name="A")
    c = sl.compute((n,), lambda i: a[0] * 1.0, name="C")
    kernel = sl.build(sl.create_schedule(c.op), [a, c], target="cpu")
    with pytest.raises(ValueError, match="size 'n'.*pass it by name"):
        kernel(np.ones(4, np.float32))
    np.testing.assert_array_equal(kernel(np.ones(4, np.float32), n=3), np.ones(3))


def test_a_split_loops_end_never_passes_its_size_so_the_guard_takes_the_call():
    """``(n - 1) // 8 + 1`` grows with n and at n's largest value still fits: no check is
    left for a call to make in Python, and the usual call runs through the guard."""
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 2.0, name="C")
    s = sl.create_schedule(c)
    outer, inner = s[c].split(c.op.axis[0], factor=8)
    s[c].vectorize(inner)
    kernel = sl.build(s, [a, c], target="cpu")
    assert not kernel._limits.derived and kernel._checked is not None
    x = np.arange(37, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), 2 * x)


def test_a_temporary_of_a_product_of_sizes_keeps_its_check():
    """A temporary of m * m elements can pass the index type where m fits it, and no array
    shows that count: the call checks it in Python, the general path."""
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    b = sl.compute((m, m), lambda i, j: a[i, 0] + a[j, 0], name="B")
    c = sl.compute((m,), lambda i: b[i, i] * 2.0, name="C")
    kernel = sl.build(sl.create_schedule(c), [a, c], target="cpu")
    assert kernel._limits.derived and kernel._checked is None
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    np.testing.assert_array_equal(kernel(x), 4 * x[:, 0])
