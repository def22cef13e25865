"""rfactor with TE's semantics, run through the interpreter against the reference."""

from __future__ import annotations

import pytest

import schedlang as sl

from .test_replay import replayed
from .util import check


def row_reduce(m, n, reducer=sl.sum, lo=0):
    a = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((lo, n), name="k")
    b = sl.compute((m,), lambda i: reducer(a[i, k], axis=k), name="B")
    return a, b


@pytest.mark.parametrize("factor_axis", [0, 1])
@pytest.mark.parametrize("which", ["inner", "outer"])
@pytest.mark.parametrize("n", [1, 12, 13])
def test_rfactor_split(factor_axis, which, n):
    a, b = row_reduce(5, n)
    s = sl.create_schedule(b)
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=4)
    bf = s.rfactor(b, ki if which == "inner" else ko, factor_axis=factor_axis)
    assert len(bf.shape) == 2
    check(s, [a], [b])


@pytest.mark.parametrize("reducer", [sl.sum, sl.max, sl.min, sl.prod], ids=lambda r: r.name)
def test_rfactor_reducers(reducer):
    a, b = row_reduce(3, 11, reducer)
    s = sl.create_schedule(b)
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=3)
    s.rfactor(b, ki)
    check(s, [a], [b])


def test_rfactor_unsplit_axis_and_nonzero_min():
    a, b = row_reduce(4, 9, lo=2)
    s = sl.create_schedule(b)
    bf = s.rfactor(b, b.op.reduce_axis[0])
    assert bf.op.reduce_axis == ()
    check(s, [a], [b])


def test_rfactor_symbolic_extent():
    m, n = sl.var("m"), sl.var("n")
    a, b = row_reduce(m, n)
    s = sl.create_schedule(b)
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=4)
    s.rfactor(b, ko)
    check(s, [a], [b], {"m": 3, "n": 10})


def test_rfactor_of_fused_reduce_axes():
    a = sl.placeholder((3, 5, 7), name="A")
    k1 = sl.reduce_axis((0, 5), name="k1")
    k2 = sl.reduce_axis((0, 7), name="k2")
    b = sl.compute((3,), lambda i: sl.sum(a[i, k1, k2], axis=[k1, k2]), name="B")
    s = sl.create_schedule(b)
    fused = s[b].fuse(k1, k2)
    fo, fi = s[b].split(fused, factor=8)
    s.rfactor(b, fi)
    check(s, [a], [b])


def test_rfactor_with_where():
    a = sl.placeholder((4, 10), name="A")
    k = sl.reduce_axis((0, 10), name="k")
    b = sl.compute((4,), lambda i: sl.sum(a[i, k], axis=k, where=k % 3 != 1), name="B")
    s = sl.create_schedule(b)
    ko, ki = s[b].split(k, factor=4)
    s.rfactor(b, ki)
    check(s, [a], [b])


def test_rfactor_makes_parallel_reduction_legal():
    """Partial sums over ``ki`` are independent: the factored axis may run in parallel."""
    a, b = row_reduce(6, 40)
    s = sl.create_schedule(b)
    with pytest.raises(sl.ScheduleError, match="rfactor it"):
        s2 = sl.create_schedule(b)
        s2[b].parallel(b.op.reduce_axis[0])
        sl.lower(s2, [a, b])
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=8)
    bf = s.rfactor(b, ki)
    s[bf].parallel(s[bf].op.axis[0])
    s[bf].reorder(s[bf].op.axis[0], s[bf].op.axis[1], s[bf].op.reduce_axis[0])
    check(s, [a], [b])


def test_rfactor_then_compute_at_and_schedule_both():
    a, b = row_reduce(7, 33)
    s = sl.create_schedule(b)
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=4)
    bf = s.rfactor(b, ki)
    bo, bi = s[b].split(s[b].op.axis[0], factor=2)
    s[bf].compute_at(s[b], bo)
    s[b].unroll(s[b].op.reduce_axis[0])
    check(s, [a], [b])


def test_rfactor_replay():
    a, b = row_reduce(sl.var("m"), 21)
    s = sl.create_schedule(b)
    ko, ki = s[b].split(b.op.reduce_axis[0], factor=4)
    bf = s.rfactor(b, ki, factor_axis=1)
    s[bf].compute_at(s[b], s[b].op.axis[0])
    again = replayed(s, [a, b])
    assert again.describe() == s.describe()
    assert "B_rf = s.rfactor(B, B_k_inner, factor_axis=1)" in s.describe()
    assert str(sl.lower(again, [a, b])) == str(sl.lower(s, [a, b]))
