"""The interpreter's model of memory barriers and bulk copies (`loopir.interpret.mbarrier`): a
pipeline of bulk copies as lowered runs and matches the reference; each way of breaking its
barriers is found, with a message that says which rule it broke."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.loopir.core.nodes import MBarrier, Seq
from schedlang.loopir.core.visit import transform_stmt
from schedlang.loopir.interpret import run
from schedlang.loopir.interpret.runtime import RaceError

N = 64


def _lowered():
    """B = 2 A through shared tiles of 32 x 16 halves refilled per step of j (4 steps), two
    stages filled by the copy engine: the producer waits for a release from the third fill."""
    a = sl.placeholder((N, N), "float16", name="A")
    b = sl.compute((N, N), lambda i, j: a[i, j] * 2, name="B")
    s = sl.create_schedule(b.op)
    staged = s.cache_read(a, "shared", [b])
    i, j = b.op.axis
    bi, ii = s[b].split(i, factor=32)
    bj, _ = s[b].split(j, factor=16)
    s[b].reorder(bi, bj, ii)
    s[b].bind(bi, sl.thread_axis("blockIdx.x"))
    s[b].bind(ii, sl.thread_axis("threadIdx.x"))
    s[staged].compute_at(s[b], bj)
    s[staged].pipeline(2, tma=True)
    return sl.lower(s, [a, b])


def _run(func):
    x = np.random.default_rng(0).uniform(1, 2, (N, N)).astype(np.float16)
    y = np.full((N, N), np.nan, np.float16)
    run(func, [x, y])
    return x, y


def _without(func, drop):
    """`func` with the memory-barrier operations `drop` picks taken out."""

    def cut(s):
        return Seq(()) if isinstance(s, MBarrier) and drop(s) else None

    return type(func)(func.name, func.params, func.sizes, transform_stmt(func.body, cut))


def test_the_pipeline_runs_as_lowered():
    x, y = _run(_lowered())
    np.testing.assert_array_equal(y, x * 2)


def test_reading_a_stage_without_waiting_for_it_is_a_race():
    func = _without(_lowered(), lambda s: s.op == "wait" and s.barrier.name.endswith(".full"))
    with pytest.raises(RaceError, match="without having waited for that phase"):
        _run(func)


def test_overwriting_a_stage_its_readers_have_not_released_is_a_race():
    func = _without(_lowered(), lambda s: s.op == "wait" and s.barrier.name.endswith(".empty"))
    with pytest.raises(RaceError, match="has not released it"):
        _run(func)


def test_a_release_that_never_comes_waits_for_ever():
    func = _without(_lowered(), lambda s: s.op == "arrive" and s.barrier.name.endswith(".empty"))
    with pytest.raises(sl.InternalError, match=r"which has not completed .* 0 of 32 arrivals"):
        _run(func)


def test_bytes_that_never_arrive_wait_for_ever():
    def more(s):
        if isinstance(s, MBarrier) and s.op == "arrive" and s.count:
            return MBarrier(s.op, s.barrier, s.index, s.count + 16, s.parity, s.pending, s.when)
        return None

    func = _lowered()
    func = type(func)(func.name, func.params, func.sizes, transform_stmt(func.body, more))
    with pytest.raises(sl.InternalError, match=r"1024 of 1040 bytes"):
        _run(func)


def test_arrivals_past_the_count_are_refused():
    def twice(s):
        if isinstance(s, MBarrier) and s.op == "arrive" and s.count:
            return Seq((s, s))
        return None

    func = _lowered()
    func = type(func)(func.name, func.params, func.sizes, transform_stmt(func.body, twice))
    with pytest.raises(sl.InternalError, match="2 arrivals on A.shared.full.* completes after 1"):
        _run(func)


def test_a_barrier_used_before_its_init_is_refused():
    func = _without(_lowered(), lambda s: s.op == "init")
    with pytest.raises(sl.InternalError, match="is used before mbarrier_init"):
        _run(func)
