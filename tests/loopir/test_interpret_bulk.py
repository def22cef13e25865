"""The interpreter's model of memory barriers and bulk copies (`loopir.interpret.mbarrier`): a
pipeline of bulk copies as lowered runs and matches the reference; each way of breaking its
barriers is found, with a message that says which rule it broke."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import Compare, const
from schedlang.loopir.core.nodes import For, If, MBarrier, Seq
from schedlang.loopir.core.visit import transform_stmt
from schedlang.loopir.interpret import run
from schedlang.loopir.interpret.runtime import RaceError

N = 64


def _lowered(warp_specialize: bool = True):
    """B = 2 A through shared tiles of 32 x 16 halves refilled per step of j (4 steps), two
    stages filled by the copy engine: the producer waits for a release from the third fill.
    The 32 consumers are a warp, which arrives once."""
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
    s[staged].pipeline(2, tma=True, warp_specialize=warp_specialize)
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
    with pytest.raises(sl.InternalError, match=r"which has not completed .* 0 of 1 arrivals"):
        _run(func)


def test_a_warp_arrives_once_for_its_threads():
    text = str(_lowered())
    assert "mbarrier_init(A.shared.empty[0], arrivals=1)" in text
    assert "mbarrier_arrive(A.shared.empty[(j.outer - 1) % 2], once a warp) if j.outer > 0" in text


def test_a_warp_arriving_once_must_arrive_whole():
    """Half a warp arriving once for the warp would release what the other half still reads."""

    def halved(s):
        if isinstance(s, For) and s.var.name == "threadIdx.x.consumer":
            lane = s.var

            def half(x):
                if isinstance(x, MBarrier) and x.per_warp:
                    return If(Compare("<", lane, const(16, "int32")), x)
                return None

            return replace(s, body=transform_stmt(s.body, half))
        return None

    func = _lowered()
    func = type(func)(func.name, func.params, func.sizes, transform_stmt(func.body, halved))
    with pytest.raises(sl.InternalError, match="16 threads of 1 warps arrive once a warp"):
        _run(func)


def test_the_first_thread_issues_the_copies_between_its_own_work():
    """Without warp specialisation no producer is added: the block's first thread refills a
    stage at the start of a step, and each step's copy is released at its end."""
    func = _lowered(warp_specialize=False)
    text = str(func)
    assert "producer" not in text and "if threadIdx.x.issuer == 0:" in text
    step = text[text.index("for j.outer in") :]
    assert step.index("bulk_copy(") < step.index("mbarrier_wait(A.shared.full[j.outer % 2]")
    assert "mbarrier_arrive(A.shared.empty[j.outer % 2], once a warp)" in step
    x, y = _run(func)
    np.testing.assert_array_equal(y, x * 2)


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
