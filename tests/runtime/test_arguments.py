"""Every check a kernel makes on its arguments before running, with its message."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl


@pytest.fixture(scope="module")
def kernel():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.placeholder((n,), name="B")
    c = sl.compute((n,), lambda i: a[i] + b[i], name="C")
    return sl.build(sl.create_schedule(c), [a, b, c])


def _arrays(n: int = 5):
    return np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32)


def test_count(kernel):
    with pytest.raises(TypeError, match=r"takes 3 arrays \(A, B, C\), got 1"):
        kernel(*_arrays()[:1])  # (two would be the inputs alone: the output is then made)


def test_not_an_array(kernel):
    a, b, c = _arrays()
    message = r"argument 'B' must be a numpy array \(or a host array with __dlpack__\), got list"
    with pytest.raises(TypeError, match=message):
        kernel(a, [1.0] * 5, c)


def test_dtype(kernel):
    a, b, c = _arrays()
    with pytest.raises(TypeError, match=r"'A' must have dtype float32, got float64.*astype"):
        kernel(a.astype(np.float64), b, c)


def test_rank(kernel):
    a, b, c = _arrays()
    with pytest.raises(ValueError, match=r"'C' must have 1 dimension\(s\), got .* \(5, 1\)"):
        kernel(a, b, c.reshape(5, 1))


def test_shapes_that_disagree_on_a_size(kernel):
    a, b, c = _arrays()
    with pytest.raises(ValueError, match="size 'n' is 5 .* but 6 from dimension 0 of 'B'"):
        kernel(a, np.ones(6, np.float32), c)


def test_output_not_contiguous(kernel):
    a, b, c = _arrays(10)
    with pytest.raises(
        ValueError,
        match=r"'C' is an output but is not C-contiguous \(strides \(8,\)\); the kernel writes "
        r"in place, so pass a C-contiguous array \(np.empty\(\(5,\), np.float32\)\)",
    ):
        kernel(a[:5], b[:5], c[::2])


def test_inputs_of_any_layout_are_read_through_a_copy(kernel):
    x = np.arange(10, dtype=np.float32)
    b = np.broadcast_to(np.float32(100.0), (5,))
    c = np.zeros(5, np.float32)
    kernel(x[::2], b, c)
    np.testing.assert_array_equal(c, x[::2] + 100.0)


def test_transposed_and_strided_inputs_2d():
    m, n = sl.var("m"), sl.var("n")
    a = sl.placeholder((m, n), name="A")
    b = sl.placeholder((m, n), name="B")
    c = sl.compute((m, n), lambda i, j: a[i, j] * 10.0 + b[i, j], name="C")
    kernel = sl.build(sl.create_schedule(c), [a, b, c])
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.arange(60, dtype=np.float32).reshape(6, 10)[::2, :8:2]
    out = np.full((4, 3), np.nan, np.float32)
    kernel(x.T, y.T, out)
    np.testing.assert_array_equal(out, x.T * 10.0 + y.T)
    assert x.flags.c_contiguous and not y.flags.c_contiguous  # the callers' arrays are as given


def test_output_overlapping_a_strided_input_reads_the_input_before_writing():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[n - 1 - i] + 1.0, name="C")
    kernel = sl.build(sl.create_schedule(c), [a, c])
    x = np.arange(5, dtype=np.float32)
    kernel(x[::-1], x)
    np.testing.assert_array_equal(x, np.arange(5) + 1.0)


def test_read_only_output(kernel):
    a, b, c = _arrays()
    c.flags.writeable = False
    with pytest.raises(ValueError, match="'C' is an output but its array is read-only"):
        kernel(a, b, c)


def test_read_only_input_is_fine(kernel):
    a, b, c = _arrays()
    a.flags.writeable = False
    kernel(a, b, c)
    np.testing.assert_array_equal(c, 2.0)


def test_output_overlapping_an_input(kernel):
    a, b, _ = _arrays()
    with pytest.raises(ValueError, match="'C' is an output that overlaps 'A'"):
        kernel(a, b, a)


def test_unknown_size_name(kernel):
    with pytest.raises(TypeError, match=r"has no size 'm' \(its sizes: n\)"):
        kernel(*_arrays(), m=3)


def test_size_no_array_shows():
    lo = sl.var("lo")
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    k = sl.reduce_axis((lo, n), name="k")
    r = sl.compute((1,), lambda i: sl.sum(a[k], axis=k), name="R")
    kernel = sl.build(sl.create_schedule(r), [a, r])
    x = np.arange(6, dtype=np.float32)
    out = np.zeros(1, np.float32)
    with pytest.raises(
        ValueError, match=r"size 'lo' .* pass it by name: kernel\(\.\.\., lo=value\)"
    ):
        kernel(x, out)
    kernel(x, out, lo=2)
    assert out[0] == 2 + 3 + 4 + 5


@pytest.fixture(scope="module")
def shifted():
    """C[i] = A[i, 0] + P[i + 2] with A: n x 3 and P: n + 2, so sizes are read off compounds."""
    n = sl.var("n")
    a = sl.placeholder((n, 3), name="A")
    p = sl.placeholder((n + 2,), name="P")
    c = sl.compute((n,), lambda i: a[i, 0] + p[i + 2], name="C")
    return sl.build(sl.create_schedule(c), [a, p, c])


def test_compound_extent_that_disagrees(shifted):
    a, c = np.ones((4, 3), np.float32), np.zeros(4, np.float32)
    with pytest.raises(
        ValueError, match=r"dimension 0 of 'P' is n \+ 2 = 6 with n=4, but its array has 7"
    ):
        shifted(a, np.ones(7, np.float32), c)


def test_constant_extent_that_disagrees(shifted):
    p, c = np.ones(6, np.float32), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match=r"dimension 1 of 'A' must be 3, but its array has 2"):
        shifted(np.ones((4, 2), np.float32), p, c)


def test_size_that_cannot_be_read_off_an_extent():
    m = sl.var("m")
    q = sl.placeholder((2 * m,), name="Q")
    d = sl.compute((2 * m,), lambda i: q[i] * 2.0, name="D")
    kernel = sl.build(sl.create_schedule(d), [q, d])
    with pytest.raises(
        ValueError,
        match=r"dimension 0 of 'Q' is 2 \* m, from which 'm' cannot be read off the size 5; "
        r"pass it as kernel\(\.\.\., m=value\)",
    ):
        kernel(np.ones(5, np.float32), np.zeros(5, np.float32))
    out = np.zeros(6, np.float32)
    kernel(np.ones(6, np.float32), out)
    np.testing.assert_array_equal(out, 2.0)
