"""cache_write after split, fuse and reorder (TE's relayout): the cache stage is laid out by
the stage's loops, computes in their order, and the stage copies out of it; checked against
the reference on random data, with sizes the splits do not divide."""

from __future__ import annotations

import pytest

import schedlang as sl
from schedlang.errors import ScheduleError
from tests.schedule.util import check


def _product():
    m, n = sl.var("m"), sl.var("n")
    A = sl.placeholder((m, n), name="A")
    B = sl.placeholder((m, n), name="B")
    C = sl.compute((m, n), lambda i, j: A[i, j] * B[i, j] + 1, name="C")
    return A, B, C


def test_the_cache_takes_the_loops_of_a_split_and_reorder():
    A, B, C = _product()
    s = sl.create_schedule(C)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].reorder(xo, C.op.axis[1], xi)
    CC = s.cache_write(C, "global")
    assert [iv.name for iv in CC.op.axis] == ["i.outer.c", "j.c", "i.inner.c"]
    assert str(CC.shape[2]) == "4"
    assert s[C].leaf_iter_vars == list(C.op.axis)  # the stage is a plain copy again
    text = str(sl.lower(s, [A, B, C]))
    assert "C.global[i // 4, j, i % 4]" in text
    check(s, [A, B], [C], {"m": 10, "n": 3})
    assert str(sl.lower(s.copy(), [A, B, C])) == text  # replayed: the same relayout
    s.undo()
    assert s[C].leaf_iter_vars == [xo, C.op.axis[1], xi]
    CC = s.cache_write(C, "global")
    xo, xi = s[CC].split(CC.op.axis[1], factor=2)  # the cache's loops are scheduled as any
    s[CC].vectorize(CC.op.axis[2])
    check(s, [A, B], [C], {"m": 7, "n": 5})


def test_fused_and_nparts_loops_lay_the_cache_out_too():
    A = sl.placeholder((6, 10), name="A")
    C = sl.compute((6, 10), lambda i, j: A[i, j] - 3, name="C")
    s = sl.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], nparts=4)
    s[C].fuse(ii, C.op.axis[1])
    CC = s.cache_write(C, "local")
    assert [int(e.value) for e in CC.shape] == [4, 20]
    check(s, [A], [C])


def test_a_reduction_keeps_its_reduce_loop_and_guards_the_tail():
    m, n = sl.var("m"), sl.var("n")
    A = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    C = sl.compute((m,), lambda i: sl.sum(A[i, k] * A[i, k], axis=k), name="C")
    s = sl.create_schedule(C)
    s[C].split(C.op.axis[0], factor=4)
    CC = s.cache_write(C, "global")
    assert len(CC.op.axis) == 2 and len(CC.op.reduce_axis) == 1
    check(s, [A], [C], {"m": 9, "n": 5})


def test_placed_annotated_or_reduce_scheduled_stages_are_refused():
    A, B, C = _product()
    s = sl.create_schedule(C)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].vectorize(xi)
    with pytest.raises(ScheduleError, match="already annotated or bound; call cache_write"):
        s.cache_write(C, "global")
    m = sl.var("m")
    A = sl.placeholder((m, 8), name="A")
    k = sl.reduce_axis((0, 8), name="k")
    R = sl.compute((m,), lambda i: sl.sum(A[i, k], axis=k), name="R")
    s = sl.create_schedule(R)
    s[R].split(k, factor=4)
    with pytest.raises(ScheduleError, match="reduce loops were split, fused or moved"):
        s.cache_write(R, "global")


def test_nested_splits_and_a_split_fuse_guard_every_tail():
    A, B, C = _product()
    s = sl.create_schedule(C)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    xio, xii = s[C].split(xi, factor=3)  # 4 is not a multiple of 3
    check_cached = s.cache_write(C, "global")
    assert len(check_cached.op.axis) == 4
    check(s, [A, B], [C], {"m": 11, "n": 2})
    A2 = sl.placeholder((5, 7), name="A2")
    C2 = sl.compute((5, 7), lambda i, j: A2[i, j] * 5, name="C2")
    s = sl.create_schedule(C2)
    fused = s[C2].fuse(C2.op.axis[0], C2.op.axis[1])
    s[C2].split(fused, factor=6)  # 35 is not a multiple of 6
    s.cache_write(C2, "local")
    check(s, [A2], [C2])
