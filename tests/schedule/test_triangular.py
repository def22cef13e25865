"""Reductions whose range depends on the element (``reduce_axis((0, i + 1))``): triangles and
bands, run exactly over their points (isl's loop bounds), scheduled, on the CPU and in the GPU
simulator, against numpy on random data with outputs poisoned with NaN."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl

RNG = np.random.default_rng(5)


def _lower_rows():
    """D[i] = sum of A[i, 0..i]: the lower triangle's rows."""
    n = sl.var("n")
    a = sl.placeholder((n, n), name="A")

    def rows(i):
        k = sl.reduce_axis((0, i + 1), name="k")
        return sl.sum(a[i, k], axis=k)

    return a, sl.compute((n,), rows, name="D")


def _band(width=3):
    """E[i, j] = sum of A[i .. min(i + width, n) - 1, j]."""
    n = sl.var("n")
    a = sl.placeholder((n, n), name="A")

    def band(i, j):
        k = sl.reduce_axis((i, sl.min(i + width, n)), name="k")
        return sl.sum(a[k, j], axis=k)

    return a, sl.compute((n, n), band, name="E")


def _band_reference(x, width=3):
    size = x.shape[0]
    return np.array([x[i : min(i + width, size)].sum(axis=0) for i in range(size)])


def _matrix(size):
    return RNG.uniform(-1, 1, (size, size)).astype("float32")


def test_the_loops_run_the_triangle_and_nothing_else():
    a, d = _lower_rows()
    text = str(sl.lower(sl.create_schedule(d), [a, d]))
    assert "for k in range(0, i + 1):" in text
    kernel = sl.build(sl.create_schedule(d), [a, d])
    for size in (1, 7, 33):
        x, out = _matrix(size), np.full(size, np.nan, "float32")
        kernel(x, out)
        np.testing.assert_allclose(out, np.tril(x).sum(axis=1), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(sl.reference(d, {a: x}), np.tril(x).sum(axis=1), rtol=1e-5)


def test_a_band_split_and_parallel():
    a, e = _band()
    s = sl.create_schedule(e)
    ko, ki = s[e].split(e.op.reduce_axis[0], factor=2)
    s[e].parallel(e.op.axis[0])
    kernel = sl.build(s, [a, e])
    for size in (2, 11):
        x, out = _matrix(size), np.full((size, size), np.nan, "float32")
        kernel(x, out)
        np.testing.assert_allclose(out, _band_reference(x), rtol=1e-5, atol=1e-6)


def test_rfactor_of_a_triangular_reduction():
    a, d = _lower_rows()
    s = sl.create_schedule(d)
    ko, ki = s[d].split(d.op.reduce_axis[0], factor=4)
    s.rfactor(d, ki)
    kernel = sl.build(s, [a, d])
    x, out = _matrix(13), np.full(13, np.nan, "float32")
    kernel(x, out)
    np.testing.assert_allclose(out, np.tril(x).sum(axis=1), rtol=1e-5, atol=1e-6)


def test_one_thread_a_row_in_the_gpu_simulator():
    a, d = _lower_rows()
    s = sl.create_schedule(d)
    bx, tx = s[d].split(d.op.axis[0], factor=32)
    s[d].bind(bx, "blockIdx.x")
    s[d].bind(tx, "threadIdx.x")
    kernel = sl.build(s, [a, d], target="cuda")
    x, out = _matrix(45), np.full(45, np.nan, "float32")
    kernel.simulate(x, out)
    np.testing.assert_allclose(out, np.tril(x).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_a_range_schedlang_cannot_bound_is_refused():
    n = sl.var("n")
    a = sl.placeholder((n, n), name="A")

    def squares(i):
        k = sl.reduce_axis((0, i * i + 1), name="k")
        return sl.sum(a[i, k], axis=k)

    with pytest.raises(sl.AlgorithmError, match="range of reduce_axis 'k' uses 'i \\* i'"):
        sl.compute((n,), squares, name="Q")
