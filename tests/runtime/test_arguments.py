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
    with pytest.raises(TypeError, match=r"takes 3 arrays \(A, B, C\), got 2"):
        kernel(*_arrays()[:2])


def test_not_an_array(kernel):
    a, b, c = _arrays()
    with pytest.raises(TypeError, match="argument 'B' must be a numpy array, got list"):
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


def test_not_contiguous(kernel):
    a, b, c = _arrays(10)
    with pytest.raises(ValueError, match=r"'B' is not C-contiguous.*ascontiguousarray"):
        kernel(a[:5], b[::2], c[::2].copy())


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
