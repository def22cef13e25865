"""A primitive that fails at its call leaves the schedule as it was: no record, no stage, no
changed loop, so the user goes on from the line before (`Schedule.undo` is for what only
lowering can find)."""

from __future__ import annotations

import pytest

import schedlang as sl


def _two_stages():
    n = sl.var("n")
    a = sl.placeholder((n, 64), name="A")
    b = sl.compute((n, 64), lambda i, j: a[i, j] * 2.0, name="B")
    k = sl.reduce_axis((0, 64), name="k")
    c = sl.compute((n,), lambda i: sl.sum(b[i, k], axis=k), name="C")
    s = sl.create_schedule(c)
    io, ii = s[c].split(c.op.axis[0], factor=4)
    return s, a, b, c, io, ii


MISTAKES = {
    "split by zero": lambda s, a, b, c, io, ii: s[c].split(ii, factor=0),
    "split both ways": lambda s, a, b, c, io, ii: s[c].split(ii, factor=2, nparts=2),
    "fuse apart": lambda s, a, b, c, io, ii: s[c].fuse(io, c.op.reduce_axis[0]),
    "reorder a stranger": lambda s, a, b, c, io, ii: s[c].reorder(ii, b.op.axis[0]),
    "bind a bad tag": lambda s, a, b, c, io, ii: s[c].bind(io, "threadIdx.w"),
    "vectorize a stranger": lambda s, a, b, c, io, ii: s[c].vectorize(b.op.axis[1]),
    "compute_at itself": lambda s, a, b, c, io, ii: s[c].compute_at(s[c], io),
    "compute_at a stranger": lambda s, a, b, c, io, ii: s[b].compute_at(s[c], b.op.axis[0]),
    "cache_read a bad scope": lambda s, a, b, c, io, ii: s.cache_read(a, "texture", [b]),
    "cache_write a placeholder": lambda s, a, b, c, io, ii: s.cache_write(a, "local"),
    "rfactor a data axis": lambda s, a, b, c, io, ii: s.rfactor(c, io),
    "set_scope a bad scope": lambda s, a, b, c, io, ii: s[b].set_scope("texture"),
    "storage_align an output": lambda s, a, b, c, io, ii: s[c].storage_align(io, 8, 1),
    "swizzle 100 bytes": lambda s, a, b, c, io, ii: s[b].swizzle(100),
    "pipeline of one stage": lambda s, a, b, c, io, ii: s[b].pipeline(1),
    "tensorize a bad intrinsic": lambda s, a, b, c, io, ii: s[c].tensorize(ii, "mma"),
    "a predicate of loops": lambda s, a, b, c, io, ii: s[c].set_store_predicate(
        c.op.axis[0].var < 2
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES), ids=list(MISTAKES))
def test_the_schedule_is_unchanged(mistake):
    s, a, b, c, io, ii = _two_stages()
    records, stages = list(s.records), [stage.name for stage in s.stages]
    text, lowered = s.describe(), str(sl.lower(s, [a, c]))
    with pytest.raises((sl.ScheduleError, TypeError, ValueError)):
        MISTAKES[mistake](s, a, b, c, io, ii)
    assert s.records == records
    assert [stage.name for stage in s.stages] == stages
    assert s.describe() == text
    assert str(sl.lower(s, [a, c])) == lowered
