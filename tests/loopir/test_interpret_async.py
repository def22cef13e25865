"""Asynchronous copies (`AsyncCopy`, `AsyncCommit`, `AsyncWait`) in the loop-IR interpreter: a
multi-stage pipeline against numpy, and the mistakes a GPU punishes (reading data still in
flight, a missing barrier, waiting for too little, never waiting) caught as errors."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.errors import InternalError
from schedlang.ir.expr import cast, const
from schedlang.loopir.core.nodes import (
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    Buffer,
    For,
    If,
    LoweredFunc,
    seq,
)
from schedlang.loopir.interpret import RaceError, run

from .nests import load, loop_var, store

F16, F32 = "float16", "float32"
THREADS = 8
BX, TX, P, KL, J = (loop_var(n) for n in ("bx", "tx", "p", "k", "j"))


def _random(gen, shape, dtype):
    """Values that are never 0 (so that a read of the wrong element cannot pass by luck)."""
    sign = gen.choice([-1.0, 1.0], shape)
    return (sign * gen.uniform(0.5, 2.0, shape)).astype(dtype)


# -- a multi-stage pipeline over k tiles ----------------------------------------------------
def _pipeline(dtype=F32, lanes=4, stages=3, pending=None, order="wait barrier issue read"):
    """C[b, t] = sum over k of A[b, k, (t*lanes + lanes + 1 + k) % W]: each thread copies its
    `lanes` elements of every k tile into a `stages`-deep shared ring (cp.async), and reads an
    element another thread copied. Prologue: `stages` - 1 groups; per k: the statements in
    `order` ("wait": async_wait(`pending`, by default stages - 2), "barrier", "issue": the copy
    of tile k + stages - 1 if any and a commit, "read": accumulate)."""
    NB, K = sl.var("NB"), sl.var("K")
    W = THREADS * lanes
    A = Buffer("A", (NB, K, const(W)), dtype)
    C = Buffer("C", (NB, const(THREADS)), F32)
    S = Buffer("A.shared", (const(stages), const(W)), dtype, "shared")
    acc = Buffer("acc", (const(1),), F32, "local")

    def copy(tile):
        return AsyncCopy(S, (tile % stages, TX * lanes), A, (BX, tile, TX * lanes), lanes)

    nxt = KL + (stages - 1)
    element = load(S, KL % stages, (TX * lanes + (lanes + 1) + KL) % W)
    parts = {
        "wait": AsyncWait(stages - 2 if pending is None else pending),
        "barrier": Barrier(),
        "issue": seq(If(nxt < K, copy(nxt)), AsyncCommit()),
        "read": store(acc, (0,), load(acc, 0) + cast(element, F32)),
    }
    body = seq(
        store(acc, (0,), const(0.0, F32)),
        For(P, const(0), const(stages - 1), "serial", seq(If(P < K, copy(P)), AsyncCommit())),
        For(KL, const(0), K, "serial", seq(*(parts[p] for p in order.split()))),
        store(C, (BX, TX), load(acc, 0)),
    )
    threads = For(TX, const(0), const(THREADS), "bound", body, "threadIdx.x")
    nest = For(BX, const(0), NB, "bound", Allocate(S, Allocate(acc, threads)), "blockIdx.x")
    return LoweredFunc("pipeline", (A, C), (NB, K), nest)


def _pipeline_expected(a: np.ndarray, lanes: int) -> np.ndarray:
    nb, k, w = a.shape
    out = np.zeros((nb, THREADS), np.float32)
    for t in range(THREADS):
        for kk in range(k):
            out[:, t] += a[:, kk, (t * lanes + lanes + 1 + kk) % w].astype(np.float32)
    return out


def _run_pipeline(func, dtype=F32, lanes=4, blocks=2, k=5, seed=0):
    a = _random(np.random.default_rng(seed), (blocks, k, THREADS * lanes), dtype)
    c = np.zeros((blocks, THREADS), np.float32)
    run(func, [a, c])
    return a, c


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize(("dtype", "lanes"), [(F32, 4), (F16, 8), (F32, 1), (F16, 4)])
def test_pipeline_matches_numpy(dtype, lanes, k):
    a, c = _run_pipeline(_pipeline(dtype, lanes), dtype, lanes, k=k, seed=k)
    np.testing.assert_array_equal(c, _pipeline_expected(a, lanes))


def test_deeper_pipeline_matches_numpy():
    a, c = _run_pipeline(_pipeline(stages=4), k=7)
    np.testing.assert_array_equal(c, _pipeline_expected(a, 4))


def test_waiting_for_everything_is_correct_too():
    a, c = _run_pipeline(_pipeline(pending=0), k=4)
    np.testing.assert_array_equal(c, _pipeline_expected(a, 4))


def test_pending_too_large_reads_data_in_flight():
    with pytest.raises(RaceError, match=r"still in flight \(its group 0 is still in flight"):
        _run_pipeline(_pipeline(pending=2))


def test_missing_barrier_after_the_wait_is_a_race():
    with pytest.raises(RaceError, match=r"reads it after thread \(x=\d\) wrote it"):
        _run_pipeline(_pipeline(order="wait issue read"))


def test_issue_before_the_barrier_overwrites_a_stage_others_read():
    """The barrier must come before the next copy: it overwrites the stage read last time."""
    with pytest.raises(RaceError, match=r"issues an async copy to it after thread"):
        _run_pipeline(_pipeline(order="wait issue barrier read"))


def test_copies_in_flight_at_the_end_of_a_block_are_an_error():
    """Checked at the end of each block (each iteration of the blockIdx loop), not only of
    the kernel: the next block must not inherit the copies (nor their groups)."""
    with pytest.raises(InternalError, match=r"never waited for(.|\n)*end of a block of for bx"):
        _run_pipeline(_pipeline(order="barrier issue"), k=2)


def test_reading_without_any_wait_is_an_error_not_nan():
    with pytest.raises(RaceError, match="in flight"):
        _run_pipeline(_pipeline(order="barrier issue read"))


# -- one block, one copy per thread ---------------------------------------------------------
W = THREADS * 4
A = Buffer("A", (const(W),), F32)
C = Buffer("C", (const(W),), F32)
S = Buffer("A.shared", (const(W),), F32, "shared")


def _copy(offset=0, dst=S, src=A, lanes=4):
    return AsyncCopy(dst, (TX * lanes + offset,), src, (TX * lanes + offset,), lanes)


def _read(neighbour: bool):
    """C[4 tx + j] = S[4 tx + j], or S of the next thread's elements (another thread's copy)."""
    at = (TX * 4 + 4 + J) % W if neighbour else TX * 4 + J
    return For(J, const(0), const(4), "serial", store(C, (TX * 4 + J,), load(S, at)))


def _block(*stmts, shared=S) -> LoweredFunc:
    body = For(TX, const(0), const(THREADS), "bound", seq(*stmts), "threadIdx.x")
    return LoweredFunc("block", (A, C), (), Allocate(shared, body))


def _run(func):
    a = _random(np.random.default_rng(1), (W,), F32)
    c = np.zeros(W, np.float32)
    run(func, [a, c])
    return a, c


def test_own_copy_is_visible_after_own_wait_without_barrier():
    a, c = _run(_block(_copy(), AsyncCommit(), AsyncWait(0), _read(neighbour=False)))
    np.testing.assert_array_equal(c, a)


def test_other_threads_copy_is_visible_after_wait_and_barrier():
    a, c = _run(_block(_copy(), AsyncCommit(), AsyncWait(0), Barrier(), _read(neighbour=True)))
    np.testing.assert_array_equal(c, np.roll(a, -4))


def test_reading_before_the_wait_is_an_error():
    func = _block(_copy(), AsyncCommit(), Barrier(), _read(neighbour=True))
    with pytest.raises(RaceError, match=r"reads it while the async copy .* in flight"):
        _run(func)


def test_reading_own_copy_before_the_wait_is_an_error():
    with pytest.raises(RaceError, match="in flight"):
        _run(_block(_copy(), AsyncCommit(), _read(neighbour=False), AsyncWait(0)))


def test_never_waiting_is_an_error_at_block_end():
    with pytest.raises(InternalError, match="never waited for") as err:
        _run(_block(_copy(), AsyncCommit()))
    assert "async_wait(pending=0)" in str(err.value)


def test_never_committed_is_an_error_at_block_end():
    with pytest.raises(InternalError, match="never waited for.*never committed"):
        _run(_block(_copy(), AsyncWait(0)))


def test_wait_does_not_wait_for_an_uncommitted_copy():
    func = _block(_copy(), AsyncWait(0), _read(neighbour=False))
    with pytest.raises(RaceError, match="never committed"):
        _run(func)


def test_store_to_an_element_in_flight_is_an_error():
    func = _block(_copy(), AsyncCommit(), store(S, (TX * 4 + 1,), const(1.0, F32)), AsyncWait(0))
    with pytest.raises(RaceError, match=r"writes it while the async copy"):
        _run(func)


def test_second_copy_to_an_element_in_flight_is_an_error():
    func = _block(_copy(), _copy(), AsyncCommit(), AsyncWait(0))
    with pytest.raises(RaceError, match=r"issues an async copy to it while the async copy"):
        _run(func)


def test_copy_after_the_wait_into_the_same_place_is_fine():
    body = (_copy(), AsyncCommit(), AsyncWait(0), _copy(), AsyncCommit(), AsyncWait(0))
    a, c = _run(_block(*body, _read(neighbour=False)))
    np.testing.assert_array_equal(c, a)


def test_two_threads_copying_to_one_element_is_a_race():
    copy = AsyncCopy(S, (const(0),), A, (TX * 4,), 4)
    with pytest.raises(RaceError, match="both write"):
        _run(_block(copy, AsyncCommit(), AsyncWait(0)))


def test_groups_land_in_order_per_thread():
    """Two groups, wait(1): the older landed, the newer still in flight."""
    lo = AsyncCopy(S, (TX * 4,), A, (TX * 4,), 4)
    hi_s = Buffer("B.shared", (const(W),), F32, "shared")
    hi = AsyncCopy(hi_s, (TX * 4,), A, (TX * 4,), 4)
    read_hi = store(C, (TX * 4,), load(hi_s, TX * 4))
    body = seq(lo, AsyncCommit(), hi, AsyncCommit(), AsyncWait(1), _read(neighbour=False))
    a, c = _run(_block(Allocate(hi_s, seq(body, AsyncWait(0)))))
    np.testing.assert_array_equal(c, a)
    late = seq(lo, AsyncCommit(), hi, AsyncCommit(), AsyncWait(1), read_hi, AsyncWait(0))
    with pytest.raises(RaceError, match=r"group 1 is still in flight.*waited for the first 1"):
        _run(_block(Allocate(hi_s, late)))


# -- structure and alignment ----------------------------------------------------------------
def test_copy_sizes_cp_async_cannot_do_are_rejected():
    with pytest.raises(InternalError, match="4, 8 or 16 bytes"):
        _run(_block(AsyncCopy(S, (TX * 4,), A, (TX * 4,), 3), AsyncCommit(), AsyncWait(0)))


def test_copy_must_go_from_global_to_shared():
    other = Buffer("B.shared", (const(W),), F32, "shared")
    copy = AsyncCopy(S, (TX * 4,), other, (TX * 4,), 4)
    with pytest.raises(InternalError, match="from global to shared"):
        _run(_block(Allocate(other, seq(copy, AsyncCommit(), AsyncWait(0)))))


def test_misaligned_copy_is_an_error():
    wide = Buffer("A.shared", (const(W + 4),), F32, "shared")
    copy = AsyncCopy(wide, (TX * 4 + 2,), A, (TX * 4,), 4)
    with pytest.raises(InternalError, match="misaligned async copy of 16 bytes"):
        _run(_block(copy, AsyncCommit(), AsyncWait(0), shared=wide))


def test_alignment_uses_the_buffer_strides():
    """A row stride of 34 elements puts row 1 at element 34: not 16-byte aligned."""
    padded = Buffer("A.shared", (const(2), const(32)), F32, "shared", (const(34), const(1)))
    copy = AsyncCopy(padded, (TX % 2, TX // 2 * 4), A, (TX * 4,), 4)
    with pytest.raises(InternalError, match=r"misaligned .*A.shared\[1, 0\]"):
        _run(_block(copy, AsyncCommit(), AsyncWait(0), shared=padded))


def test_copy_past_the_end_of_the_source_is_out_of_bounds():
    copy = AsyncCopy(S, (TX * 4,), A, (TX * 4 + 4,), 4)
    with pytest.raises(InternalError, match=r"out-of-bounds access A\[32\]"):
        _run(_block(copy, AsyncCommit(), AsyncWait(0)))


# -- copies outside thread loops ------------------------------------------------------------
def test_uniform_copy_without_thread_loops():
    small = Buffer("A.shared", (const(4),), F32, "shared")
    body = seq(
        AsyncCopy(small, (const(0),), A, (const(8),), 4),
        AsyncCommit(),
        AsyncWait(0),
        For(J, const(0), const(4), "serial", store(C, (J,), load(small, J))),
    )
    a, c = _run(LoweredFunc("uniform", (A, C), (), Allocate(small, body)))
    np.testing.assert_array_equal(c[:4], a[8:12])


def test_uniform_copy_is_thread_0s():
    """A copy outside thread loops is issued by thread 0 alone (as the CUDA code generator
    narrows it): thread 0's wait lands it, and the others need a barrier after that wait."""
    copy = AsyncCopy(S, (const(0),), A, (const(0),), 4)
    read = For(J, const(0), const(4), "serial", store(C, (TX * 4 + J,), load(S, J)))

    def func(*stmts):
        threads = For(TX, const(0), const(THREADS), "bound", seq(*stmts, read), "threadIdx.x")
        body = Allocate(S, seq(copy, AsyncCommit(), threads))
        return LoweredFunc("uniform", (A, C), (), body)

    for wait in (AsyncWait(0), If(TX < 1, AsyncWait(0))):
        a, c = _run(func(wait, Barrier()))
        np.testing.assert_array_equal(c, np.tile(a[:4], THREADS))
    with pytest.raises(RaceError, match=r"that thread \(x=0\) \(alone, .*still in flight"):
        _run(func(If(TX >= 4, AsyncWait(0)), Barrier()))
    with pytest.raises(RaceError, match=r"reads it after thread \(x=0\) wrote it"):
        _run(func(AsyncWait(0)))
