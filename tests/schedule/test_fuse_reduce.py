"""`fuse` of data loops with reduce loops: a reduce loop, as in TE, whose init runs the data
loops on their own first. Checked against the reference on random data with NaN-poisoned
outputs (odd sizes, a symbolic one, splits that do not divide, a fuse in either order, a
stage computed at another's loop), and each way of running its iterations at once refused."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.errors import FactorError, LegalityError, RFactorError

RNG = np.random.default_rng(5)


def _scaled_sums(rows=None):
    """Y[j, i] = (i + 1) * sum_k X[j, k]: 3 outputs per row, 11 terms per sum."""
    m = sl.var("m") if rows is None else rows
    x = sl.placeholder((m, 11), name="X")
    k = sl.reduce_axis((0, 11), name="k")
    y = sl.compute((m, 3), lambda j, i: sl.sum(x[j, k] * (i + 1.0), axis=k), name="Y")
    return x, y, k


def _check(s, args, out_tensor, x_shape, out_shape):
    x = RNG.uniform(-1, 1, x_shape).astype("float32")
    out = np.full(out_shape, np.nan, "float32")
    sl.build(s, args)(x, out)
    np.testing.assert_allclose(out, sl.evaluate(out_tensor, {args[0]: x}), rtol=1e-5, atol=1e-6)


def test_a_data_loop_fused_with_the_reduce_loop():
    x, y, k = _scaled_sums()
    s = sl.create_schedule(y)
    j, i = y.op.axis
    s[y].fuse(i, k)
    text = str(sl.lower(s, [x, y]))
    assert "for i in range(0, 3):\n      Y[j, i] = 0.0\n    for i.k.fused in range(0, 33):" in text
    _check(s, [x, y], y, (7, 11), (7, 3))


def test_all_loops_fused_and_split_unevenly():
    x, y, k = _scaled_sums(rows=5)
    s = sl.create_schedule(y)
    fused = s[y].fuse(*y.op.axis, k)
    outer, inner = s[y].split(fused, factor=7)
    s[y].unroll(inner)
    _check(s, [x, y], y, (5, 11), (5, 3))


def test_the_reduce_loop_fused_outside_a_data_loop():
    x, y, k = _scaled_sums()
    s = sl.create_schedule(y)
    j, i = y.op.axis
    s[y].reorder(j, k, i)
    s[y].fuse(k, i)
    _check(s, [x, y], y, (6, 11), (6, 3))


def test_a_fused_stage_computed_at_a_loop_of_its_reader():
    x, y, k = _scaled_sums()
    z = sl.compute(y.shape, lambda j, i: y[j, i] * 2.0, name="Z")
    s = sl.create_schedule(z)
    s[y].fuse(*y.op.axis, k)
    s[y].compute_at(s[z], z.op.axis[0])
    text = str(sl.lower(s, [x, z]))
    assert "allocate Y: float32[1, 3]" in text and "range(0, 33)" in text
    _check(s, [x, z], z, (9, 11), (9, 3))


def test_a_fused_loop_run_at_once_is_refused():
    x, y, k = _scaled_sums()
    s = sl.create_schedule(y)
    fused = s[y].fuse(y.op.axis[1], k)
    with pytest.raises(LegalityError, match="'i.k.fused' runs the reduction of 'Y'"):
        s[y].parallel(fused)
    with pytest.raises(RFactorError, match="already has primitives other than splits and fuses"):
        s.rfactor(y, fused)


def test_a_symbolic_reduce_loop_fused_after_a_data_loop_is_refused():
    n = sl.var("n")
    x = sl.placeholder((4, n), name="X")
    k = sl.reduce_axis((0, n), name="k")
    y = sl.compute((4,), lambda i: sl.sum(x[i, k], axis=k), name="Y")
    s = sl.create_schedule(y)
    s[y].fuse(y.op.axis[0], k)
    with pytest.raises(FactorError, match="a fuse with a reduce loop needs constant extents"):
        sl.lower(s, [x, y])
