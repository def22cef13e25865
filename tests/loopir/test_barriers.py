"""Barrier insertion on hand-built GPU kernels.

Each positive case runs in the interpreter without the pass (a race, or a wrong result) and with
it (the numpy result), and a few compare the printed nest, so the barriers' exact places are
pinned. The interpreter runs threads SIMT-style and checks every barrier for divergence, so a
barrier left under a thread-dependent guard fails these tests too.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import (
    Allocate,
    Barrier,
    Buffer,
    For,
    If,
    Let,
    LoweredFunc,
    Stmt,
    seq,
)
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.interpret import DivergentBarrierError, RaceError, run
from schedlang.loopir.memory.barriers import insert_barriers

from .nests import F32, load, loop_var, matmul_tail, store, tiled_matmul, zero

N, K = sl.var("N"), sl.var("K")


def _random(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(F32)


def _with_barriers(func: LoweredFunc) -> LoweredFunc:
    return LoweredFunc(func.name, func.params, func.sizes, insert_barriers(func.body))


def _barrier_count(func: LoweredFunc) -> int:
    return sum(isinstance(s, Barrier) for s in walk_stmt(func.body))


def _nest(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def _thread(var, extent, body, tag: str = "threadIdx.x") -> For:
    return For(
        var, const(0), const(extent) if isinstance(extent, int) else extent, "bound", body, tag
    )


def _block(var, extent, body, tag: str = "blockIdx.x") -> For:
    return For(var, const(0), extent, "bound", body, tag)


def _serial(var, extent, body, kind: str = "serial") -> For:
    return For(var, const(0), const(extent) if isinstance(extent, int) else extent, kind, body)


# -- kernels ------------------------------------------------------------------------------
def te_matmul() -> LoweredFunc:
    """TE's shared-memory matmul: per 8x8 tile of C, thread tx owns column tx and 8 rows in a
    local accumulator; per k tile of 4, loops bound to threadIdx.x inside the thread loop
    (the same hardware index) fill AA (row tx2) and BB (column tx3), then all rows are
    accumulated from them."""
    M = sl.var("M")
    A, B, C = Buffer("A", (M, K), F32), Buffer("B", (K, N), F32), Buffer("C", (M, N), F32)
    AA = Buffer("AA", (const(8), const(4)), F32, "shared")
    BB = Buffer("BB", (const(4), const(8)), F32, "shared")
    acc = Buffer("acc", (const(8),), F32, "local")
    by, bx, tx, tx2, tx3, ko, kk, r = (
        loop_var(n) for n in ("by", "bx", "tx", "tx2", "tx3", "ko", "kk", "r")
    )
    row, col, k = by * 8 + tx2, bx * 8 + tx3, ko * 4 + kk
    fill_a = store(AA, (tx2, kk), sl.if_then_else(sl.all(row < M, k < K), load(A, row, k), zero()))
    fill_b = store(BB, (kk, tx3), sl.if_then_else(sl.all(k < K, col < N), load(B, k, col), zero()))
    update = store(acc, (r,), load(acc, r) + load(AA, r, kk) * load(BB, kk, tx))
    k_tile = seq(
        _thread(tx2, 8, _serial(kk, 4, fill_a)),
        _thread(tx3, 8, _serial(kk, 4, fill_b)),
        _serial(r, 8, _serial(kk, 4, update)),
    )
    out = If(
        sl.all(by * 8 + r < M, bx * 8 + tx < N), store(C, (by * 8 + r, bx * 8 + tx), load(acc, r))
    )
    threads = _thread(
        tx,
        8,
        Allocate(
            acc,
            seq(
                _serial(r, 8, store(acc, (r,), zero())),
                _serial(ko, (K + 3) // 4, k_tile),
                _serial(r, 8, out),
            ),
        ),
    )
    nest = _block(
        by,
        (M + 7) // 8,
        _block(bx, (N + 7) // 8, Allocate(AA, Allocate(BB, threads)), "blockIdx.x"),
        "blockIdx.y",
    )
    return LoweredFunc("matmul", (A, B, C), (M, N, K), nest)


def block_sum() -> LoweredFunc:
    """out[b] = sum of A's block b of 64, by a reduction tree over halving strides."""
    A, out = Buffer("A", (N,), F32), Buffer("out", ((N + 63) // 64,), F32)
    S = Buffer("S", (const(64),), F32, "shared")
    bx, tx, k, s = (loop_var(n) for n in ("bx", "tx", "k", "s"))
    g = bx * 64 + tx
    tree = Let(s, const(32) >> k, If(tx < s, store(S, (tx,), load(S, tx) + load(S, tx + s))))
    body = seq(
        store(S, (tx,), sl.if_then_else(g < N, load(A, g), zero())),
        _serial(k, 6, tree),
        If(tx == 0, store(out, (bx,), load(S, 0))),
    )
    nest = _block(bx, (N + 63) // 64, Allocate(S, _thread(tx, 64, body)))
    return LoweredFunc("block_sum", (A, out), (N,), nest)


def rotating_rows(existing_barrier: bool = True) -> LoweredFunc:
    """out[j, g] = sum over k of A[k, g'] with g' the next element of g's block of 8: per k,
    threads store their element of row k to S and read their neighbour's. The loop nest has
    the barrier between the store and the read; the refill of the next row needs another."""
    A, out = Buffer("A", (K, N), F32), Buffer("out", (N,), F32)
    S = Buffer("S", (const(8),), F32, "shared")
    bx, tx, k = loop_var("bx"), loop_var("tx"), loop_var("k")
    g, nxt = bx * 8 + tx, (tx + 1) % 8
    safe = sl.all(g < N, bx * 8 + nxt < N)
    step = seq(
        store(S, (tx,), sl.if_then_else(g < N, load(A, k, g), zero())),
        Barrier() if existing_barrier else None,
        If(safe, store(out, (g,), load(out, g) + load(S, nxt))),
    )
    body = seq(If(g < N, store(out, (g,), zero())), _serial(k, K, step))
    nest = _block(bx, (N + 7) // 8, Allocate(S, _thread(tx, 8, body)))
    return LoweredFunc("rotate", (A, out), (N, K), nest)


def rotating_rows_expected(a: np.ndarray) -> np.ndarray:
    n = a.shape[1]
    g = np.arange(n)
    nxt = g // 8 * 8 + (g % 8 + 1) % 8
    ok = nxt < n
    result = np.zeros(n, F32)
    result[ok] = a[:, nxt[ok]].astype("float64").sum(axis=0)
    return result


def guarded_rows() -> LoweredFunc:
    """As `rotating_rows` without a barrier, but the tail guard wraps the whole k loop (as isl
    emits it when the guard does not depend on k): the guard must be pushed inward."""
    A, out = Buffer("A", (K, N), F32), Buffer("out", (N,), F32)
    S = Buffer("S", (const(8),), F32, "shared")
    bx, tx, k = loop_var("bx"), loop_var("tx"), loop_var("k")
    g, nxt = bx * 8 + tx, (tx + 1) % 8
    value = sl.if_then_else(bx * 8 + nxt < N, load(S, nxt), zero())
    step = seq(store(S, (tx,), load(A, k, g)), store(out, (g,), load(out, g) + value))
    body = If(g < N, seq(store(out, (g,), zero()), _serial(k, K, step)))
    nest = _block(bx, (N + 7) // 8, Allocate(S, _thread(tx, 8, body)))
    return LoweredFunc("guarded", (A, out), (N, K), nest)


def short_thread_loop() -> LoweredFunc:
    """A block of 8 threads loads S; then a loop over 4 of them rotates S[0:4] K times, adding
    A: that loop is smaller than the block, so its barriers need the full loop and a guard."""
    A, out = Buffer("A", (K, const(8)), F32), Buffer("out", (const(8),), F32)
    S = Buffer("S", (const(8),), F32, "shared")
    t = Buffer("t", (const(1),), F32, "local")
    bx, tx, tx2, k = loop_var("bx"), loop_var("tx"), loop_var("tx2"), loop_var("k")
    rotate = Allocate(
        t,
        _serial(
            k,
            K,
            seq(
                store(t, (0,), load(S, (tx2 + 1) % 4)),
                store(S, (tx2,), load(t, 0) + load(A, k, tx2)),
            ),
        ),
    )
    body = seq(
        _thread(tx, 8, store(S, (tx,), tx.astype(F32))),
        _thread(tx2, 4, rotate),
        _thread(tx, 8, store(out, (tx,), load(S, tx))),
    )
    return LoweredFunc("short", (A, out), (K,), _block(bx, const(1), Allocate(S, body)))


def broadcast() -> LoweredFunc:
    """Thread 0 stores the block's maximum in S[0] and every thread reads it (softmax's
    max): one index for all threads, so the same-index rule must not apply."""
    A, out = Buffer("A", (const(8),), F32), Buffer("out", (const(8),), F32)
    S = Buffer("S", (const(1),), F32, "shared")
    bx, tx, i = loop_var("bx"), loop_var("tx"), loop_var("i")
    body = seq(
        If(
            tx == 0,
            seq(
                store(S, (0,), load(A, 0)),
                _serial(i, 8, store(S, (0,), sl.maximum(load(S, 0), load(A, i)))),
            ),
        ),
        store(out, (tx,), load(A, tx) - load(S, 0)),
    )
    return LoweredFunc(
        "bcast", (A, out), (), _block(bx, const(1), Allocate(S, _thread(tx, 8, body)))
    )


def _shared_kernel(body, S: Buffer, params, sizes=()) -> LoweredFunc:
    """`body` as the only block of a kernel that allocates `S`."""
    return LoweredFunc("k", params, sizes, _block(loop_var("bx"), const(1), Allocate(S, body)))


# -- positive cases: the interpreter finds the race, the pass fixes it ------------------------
def test_te_matmul_gets_a_barrier_before_the_compute_and_one_before_the_refill():
    func = te_matmul()
    a, b = _random(1, 19, 10), _random(2, 10, 13)
    c = np.full((19, 13), np.nan, F32)
    with pytest.raises(RaceError, match="shared buffer 'AA'"):
        run(func, [a, b, c])
    fixed = _with_barriers(func)
    run(fixed, [a, b, c])
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)
    assert str(fixed.body) == _nest("""
        for by in range(0, (M + 7) // 8):  # blockIdx.y
          for bx in range(0, (N + 7) // 8):  # blockIdx.x
            allocate AA: float32[8, 4] in shared  # 128 bytes
            allocate BB: float32[4, 8] in shared  # 128 bytes
            for tx in range(0, 8):  # threadIdx.x
              allocate acc: float32[8] in local  # 32 bytes
              for r in range(0, 8):
                acc[r] = 0.0
              for ko in range(0, (K + 3) // 4):
                barrier()
                for tx2 in range(0, 8):  # threadIdx.x
                  for kk in range(0, 4):
                    AA[tx2, kk] = select(by * 8 + tx2 < M and ko * 4 + kk < K, A[by * 8 + tx2, ko * 4 + kk], 0.0)
                for tx3 in range(0, 8):  # threadIdx.x
                  for kk in range(0, 4):
                    BB[kk, tx3] = select(ko * 4 + kk < K and bx * 8 + tx3 < N, B[ko * 4 + kk, bx * 8 + tx3], 0.0)
                barrier()
                for r in range(0, 8):
                  for kk in range(0, 4):
                    acc[r] = acc[r] + AA[r, kk] * BB[kk, tx]
              for r in range(0, 8):
                if by * 8 + r < M and bx * 8 + tx < N:
                  C[by * 8 + r, bx * 8 + tx] = acc[r]
    """)  # noqa: E501


def test_two_dimensional_tiled_matmul_gets_te_placement():
    func = tiled_matmul(first_barrier=False, second_barrier=False)
    a, b = _random(3, 19, 11), _random(4, 11, 13)
    c = np.full((19, 13), np.nan, F32)
    with pytest.raises(RaceError):
        run(func, [a, b, c])
    fixed = _with_barriers(func)
    run(fixed, [a, b, c])
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)
    k_tile = str(fixed.body).split("for k.outer in range(0, (K + 7) // 8):\n")[1]
    lines = [line.strip() for line in k_tile.splitlines()][:5]
    assert [line.split("[")[0] for line in lines] == [
        "barrier()",
        "A.shared",
        "B.shared",
        "barrier()",
        "for k.inner in range(0, 8):",
    ]
    assert _barrier_count(fixed) == 2


def test_reduction_tree_synchronises_each_halving_step_and_the_final_read():
    func = block_sum()
    a = _random(5, 150)
    result = np.full(3, np.nan, F32)
    with pytest.raises(RaceError, match="shared buffer 'S'"):
        run(func, [a, result])
    fixed = _with_barriers(func)
    run(fixed, [a, result])
    expected = [a[b * 64 : (b + 1) * 64].astype("float64").sum() for b in range(3)]
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)
    assert str(fixed.body) == _nest("""
        for bx in range(0, (N + 63) // 64):  # blockIdx.x
          allocate S: float32[64] in shared  # 256 bytes
          for tx in range(0, 64):  # threadIdx.x
            S[tx] = select(bx * 64 + tx < N, A[bx * 64 + tx], 0.0)
            for k in range(0, 6):
              barrier()
              let s = 32 >> k
              if tx < s:
                S[tx] = S[tx] + S[tx + s]
            barrier()
            if tx == 0:
              out[bx] = S[0]
    """)


def test_loop_carried_refill_gets_a_barrier_at_the_start_of_the_loop():
    func = rotating_rows(existing_barrier=True)
    a = _random(6, 5, 21)
    result = np.full(21, np.nan, F32)
    with pytest.raises(RaceError, match=r"writes it after thread \(x=\d\) read it"):
        run(func, [a, result])
    fixed = _with_barriers(func)
    run(fixed, [a, result])
    np.testing.assert_allclose(result, rotating_rows_expected(a), rtol=1e-5, atol=1e-5)
    assert str(fixed.body) == _nest("""
        for bx in range(0, (N + 7) // 8):  # blockIdx.x
          allocate S: float32[8] in shared  # 32 bytes
          for tx in range(0, 8):  # threadIdx.x
            if bx * 8 + tx < N:
              out[bx * 8 + tx] = 0.0
            for k in range(0, K):
              barrier()
              S[tx] = select(bx * 8 + tx < N, A[k, bx * 8 + tx], 0.0)
              barrier()
              if bx * 8 + tx < N and bx * 8 + (tx + 1) % 8 < N:
                out[bx * 8 + tx] = out[bx * 8 + tx] + S[(tx + 1) % 8]
    """)
    # Without the given barrier, the pass places the same two.
    assert str(_with_barriers(rotating_rows(existing_barrier=False)).body) == str(fixed.body)


def test_tail_guard_around_a_loop_is_pushed_inside_it():
    func = guarded_rows()
    a = _random(7, 4, 21)  # 21 is not a multiple of 8: the last block's guard diverges
    result = np.full(21, np.nan, F32)
    with pytest.raises(RaceError):
        run(func, [a, result])
    fixed = _with_barriers(func)
    run(fixed, [a, result])
    np.testing.assert_allclose(result, rotating_rows_expected(a), rtol=1e-5, atol=1e-5)
    assert str(fixed.body) == _nest("""
        for bx in range(0, (N + 7) // 8):  # blockIdx.x
          allocate S: float32[8] in shared  # 32 bytes
          for tx in range(0, 8):  # threadIdx.x
            if bx * 8 + tx < N:
              out[bx * 8 + tx] = 0.0
            for k in range(0, K):
              barrier()
              if bx * 8 + tx < N:
                S[tx] = A[k, bx * 8 + tx]
              barrier()
              if bx * 8 + tx < N:
                out[bx * 8 + tx] = out[bx * 8 + tx] + select(bx * 8 + (tx + 1) % 8 < N, S[(tx + 1) % 8], 0.0)
    """)  # noqa: E501


def test_thread_loop_smaller_than_the_block_becomes_a_guarded_full_loop():
    func = short_thread_loop()
    a = _random(9, 3, 8)
    result = np.full(8, np.nan, F32)
    with pytest.raises(RaceError):
        run(func, [a, result])
    fixed = _with_barriers(func)
    run(fixed, [a, result])
    s = np.arange(8, dtype="float64")
    for k in range(3):
        s[:4] = np.roll(s[:4], -1) + a[k, :4]
    np.testing.assert_allclose(result, s, rtol=1e-5, atol=1e-5)
    # The loop over k opens with a barrier, which also separates it from the first thread
    # loop; the last one reads only what each thread wrote itself.
    assert str(fixed.body) == _nest("""
        for bx in range(0, 1):  # blockIdx.x
          allocate S: float32[8] in shared  # 32 bytes
          for tx in range(0, 8):  # threadIdx.x
            S[tx] = float32(tx)
          for tx2 in range(0, 8):  # threadIdx.x
            allocate t: float32[1] in local  # 4 bytes
            for k in range(0, K):
              barrier()
              if tx2 < 4:
                t[0] = S[(tx2 + 1) % 4]
              barrier()
              if tx2 < 4:
                S[tx2] = t[0] + A[k, tx2]
          for tx in range(0, 8):  # threadIdx.x
            out[tx] = S[tx]
    """)


def test_single_writer_read_by_all_threads_needs_a_barrier():
    func = broadcast()
    a = _random(10, 8)
    result = np.full(8, np.nan, F32)
    with pytest.raises(RaceError, match="shared buffer 'S'"):
        run(func, [a, result])
    fixed = _with_barriers(func)
    run(fixed, [a, result])
    np.testing.assert_allclose(result, a - a.max(), rtol=1e-6)
    # Thread 0 alone updates S[0] in its loop: no barrier there, one before the other threads
    # read it.
    assert str(fixed.body) == _nest("""
        for bx in range(0, 1):  # blockIdx.x
          allocate S: float32[1] in shared  # 4 bytes
          for tx in range(0, 8):  # threadIdx.x
            if tx == 0:
              S[0] = A[0]
              for i in range(0, 8):
                S[0] = max(S[0], A[i])
            barrier()
            out[tx] = A[tx] - S[0]
    """)


def test_uniform_code_and_thread_loops_are_synchronised_both_ways():
    A, out = Buffer("A", (const(8),), F32), Buffer("out", (const(8),), F32)
    S = Buffer("S", (const(8),), F32, "shared")
    tx, tx2, i, j = loop_var("tx"), loop_var("tx2"), loop_var("i"), loop_var("j")
    body = seq(
        _thread(tx, 8, store(S, (tx,), load(A, tx))),
        _serial(i, 8, store(S, (i,), load(S, i) * 2.0)),  # uniform: every thread alike
        _serial(j, 8, store(out, (j,), load(S, j))),
        _thread(tx2, 8, store(out, (tx2,), load(out, tx2) + load(S, 7 - tx2))),
    )
    func = _shared_kernel(body, S, (A, out))
    a = _random(11, 8)
    with pytest.raises(RaceError, match="thread \\(all threads, outside thread loops\\) reads"):
        run(func, [a, np.zeros(8, F32)])
    fixed = _with_barriers(func)
    result = np.zeros(8, F32)
    run(fixed, [a, result])
    np.testing.assert_allclose(result, 2 * a + 2 * a[::-1], rtol=1e-6)
    # The uniform loops need nothing between them; the last thread loop reads what uniform
    # code wrote, which the interpreter accepts (it runs uniform code on every thread) but a
    # code generator may run on one thread, so it gets a barrier too.
    assert str(fixed.body) == _nest("""
        for bx in range(0, 1):  # blockIdx.x
          allocate S: float32[8] in shared  # 32 bytes
          for tx in range(0, 8):  # threadIdx.x
            S[tx] = A[tx]
          barrier()
          for i in range(0, 8):
            S[i] = S[i] * 2.0
          for j in range(0, 8):
            out[j] = S[j]
          barrier()
          for tx2 in range(0, 8):  # threadIdx.x
            out[tx2] = out[tx2] + S[7 - tx2]
    """)


def test_branches_of_a_thread_dependent_if_are_split_when_they_conflict():
    # Threads 0..3 store, threads 4..7 read what they stored: the branches run at once.
    A, out = Buffer("A", (const(8),), F32), Buffer("out", (const(8),), F32)
    S = Buffer("S", (const(4),), F32, "shared")
    tx = loop_var("tx")
    body = If(tx < 4, store(S, (tx,), load(A, tx)), store(out, (tx,), load(S, tx - 4)))
    func = _shared_kernel(_thread(tx, 8, body), S, (A, out))
    a = _random(14, 8)
    with pytest.raises(RaceError, match="reads it after thread"):
        run(func, [a, np.zeros(8, F32)])
    fixed = _with_barriers(func)
    result = np.zeros(8, F32)
    run(fixed, [a, result])
    np.testing.assert_array_equal(result[4:], a[:4])
    assert str(fixed.body) == _nest("""
        for bx in range(0, 1):  # blockIdx.x
          allocate S: float32[4] in shared  # 16 bytes
          for tx in range(0, 8):  # threadIdx.x
            if tx < 4:
              S[tx] = A[tx]
            barrier()
            if not tx < 4:
              out[tx] = S[tx - 4]
    """)


def test_uniform_guard_keeps_its_barrier_inside():
    A, out = Buffer("A", (K, const(8)), F32), Buffer("out", (const(8),), F32)
    S = Buffer("S", (const(8),), F32, "shared")
    tx = loop_var("tx")
    staged = seq(store(S, (tx,), load(A, 0, tx)), store(out, (tx,), load(S, 7 - tx)))
    func = _shared_kernel(_thread(tx, 8, If(K > 0, staged)), S, (A, out), (K,))
    a = _random(15, 2, 8)
    with pytest.raises(RaceError):
        run(func, [a, np.zeros(8, F32)])
    fixed = _with_barriers(func)
    result = np.zeros(8, F32)
    run(fixed, [a, result])
    np.testing.assert_array_equal(result, a[0, ::-1])
    assert "if K > 0:\n      S[tx] = A[0, tx]\n      barrier()\n" in str(fixed.body)


def test_shared_allocation_inside_a_loop_is_refilled_after_a_barrier():
    # On hardware the allocation is one piece of memory for all iterations (the interpreter
    # makes a fresh one per iteration, so it cannot see this race).
    A, out = Buffer("A", (K, const(8)), F32), Buffer("out", (const(8),), F32)
    S = Buffer("S", (const(8),), F32, "shared")
    bx, tx, k = loop_var("bx"), loop_var("tx"), loop_var("k")
    step = Allocate(
        S,
        seq(
            store(S, (tx,), load(A, k, tx)),
            store(out, (tx,), load(out, tx) + load(S, 7 - tx)),
        ),
    )
    body = seq(store(out, (tx,), zero()), _serial(k, K, step))
    func = LoweredFunc("f", (A, out), (K,), _block(bx, const(1), _thread(tx, 8, body)))
    fixed = _with_barriers(func)
    assert "for k in range(0, K):\n      barrier()\n      allocate S" in str(fixed.body)
    assert _barrier_count(fixed) == 2
    a, result = _random(16, 3, 8), np.zeros(8, F32)
    run(fixed, [a, result])
    np.testing.assert_allclose(result, a[:, ::-1].astype("float64").sum(axis=0), rtol=1e-5)


# -- what cannot be fixed ---------------------------------------------------------------------
_A8, _OUT8 = Buffer("A", (const(8),), F32), Buffer("out", (const(8),), F32)
_S32 = Buffer("S", (const(32),), F32, "shared")


def _staged(tx, index, read_index) -> Stmt:
    """Thread `tx` stores A[tx % 8] to S[index] and adds S[read_index] to out[tx % 8]."""
    return seq(
        store(_S32, (index,), load(_A8, tx % 8)),
        store(_OUT8, (tx % 8,), load(_OUT8, tx % 8) + load(_S32, read_index)),
    )


def _error_kernel(threads: Stmt) -> Stmt:
    return _block(loop_var("bx"), const(1), Allocate(_S32, threads))


def test_barrier_in_a_loop_nested_in_one_of_the_same_tag_is_an_error():
    tx, tx2 = loop_var("tx"), loop_var("tx2")
    inner = _thread(tx2, 4, _staged(tx2, tx2, 3 - tx2))
    nest = _error_kernel(_thread(tx, 8, inner))
    with pytest.raises(
        sl.LoweringError,
        match=r"shared buffer 'S' needs a barrier between 'S\[tx2\] = A\[tx2 % 8\]' .* but "
        r"loop 'tx2' \(threadIdx.x\) is nested in another loop bound to threadIdx.x, .*; "
        r"bind loop 'tx2' to another thread axis, or do not bind it",
    ):
        insert_barriers(nest)


def test_interpreter_runs_nested_loops_of_one_tag_as_one_index():
    # tx2 is the hardware index again, so the inner loop runs on threads 0..3 only, and a
    # barrier there is divergent: that is why the pass refuses it.
    out = Buffer("out", (const(8),), "int32")
    tx, tx2 = loop_var("tx"), loop_var("tx2")
    for sync, error in ((None, None), (Barrier(), DivergentBarrierError)):
        inner = _thread(tx2, 4, seq(sync, store(out, (tx2,), tx * 10 + tx2)))
        func = LoweredFunc("f", (out,), (), _thread(tx, 8, inner))
        result = np.zeros(8, "int32")
        if error is None:
            run(func, [result])
            np.testing.assert_array_equal(result, [0, 11, 22, 33, 0, 0, 0, 0])
        else:
            with pytest.raises(error):
                run(func, [result])


def test_barrier_in_a_loop_with_thread_dependent_bounds_is_an_error():
    tx, k = loop_var("tx"), loop_var("k")
    nest = _error_kernel(_thread(tx, 8, _serial(k, tx + 1, _staged(tx, tx, (tx + 1) % 8))))
    with pytest.raises(
        sl.LoweringError,
        match=r"loop 'k' has bounds \[0, tx \+ 1\) that depend on the thread index.*; make "
        r"the loop bounds independent of thread indices",
    ):
        insert_barriers(nest)


def test_barrier_in_a_thread_loop_of_symbolic_extent_is_an_error():
    tx, tx2, k = loop_var("tx"), loop_var("tx2"), loop_var("k")
    threads = seq(
        _thread(tx, 8, _staged(tx, tx, tx)),
        _thread(tx2, N, _serial(k, 2, _staged(tx2, tx2 % 8, (tx2 + 1) % 8))),
    )
    with pytest.raises(
        sl.LoweringError,
        match=r"loop 'tx2' \(threadIdx.x\) has extent N while the block size of threadIdx.x "
        r"is 8, so threads past its extent skip the barrier; make the thread extents of "
        r"threadIdx.x equal to the block size",
    ):
        insert_barriers(_error_kernel(threads))


@pytest.mark.parametrize("kind, verb", [("vectorized", "vectorize"), ("parallel", "parallelize")])
def test_barrier_in_a_vectorized_or_parallel_loop_is_an_error(kind, verb):
    tx, v = loop_var("tx"), loop_var("v")
    staged = _staged(tx, tx * 4 + v, (tx * 4 + v + 1) % 32)
    nest = _error_kernel(_thread(tx, 8, _serial(v, 4, staged, kind)))
    with pytest.raises(
        sl.LoweringError,
        match=f"loop 'v' is {kind}, and a barrier cannot run inside a {kind} loop; "
        f"do not {verb} loop 'v'",
    ):
        insert_barriers(nest)


def test_thread_dependent_guard_that_reads_memory_is_an_error():
    flags = Buffer("flags", (const(8),), "int32")
    tx, k = loop_var("tx"), loop_var("k")
    guarded = If(load(flags, tx) > 0, _serial(k, 2, _staged(tx, tx, (tx + 1) % 8)))
    with pytest.raises(
        sl.LoweringError,
        match=r"the guard 'if flags\[tx\] > 0:' depends on the thread, and splitting it at "
        r"the barrier would evaluate flags\[tx\] > 0, which reads memory",
    ):
        insert_barriers(_error_kernel(_thread(tx, 8, guarded)))


# -- where no barrier belongs -----------------------------------------------------------------
def test_each_thread_reading_its_own_elements_needs_no_barrier():
    # Sibling loops of one tag are one index: thread tx reads back what it stored.
    A, out = Buffer("A", (const(8), const(4)), F32), Buffer("out", (const(8),), F32)
    S = Buffer("S", (const(8), const(4)), F32, "shared")
    tx, tx2, j, k = loop_var("tx"), loop_var("tx2"), loop_var("j"), loop_var("k")
    body = seq(
        _thread(tx, 8, _serial(j, 4, store(S, (tx, j), load(A, tx, j) * 2.0))),
        _thread(
            tx2,
            8,
            seq(
                store(out, (tx2,), zero()),
                _serial(k, 4, store(out, (tx2,), load(out, tx2) + load(S, tx2, k))),
            ),
        ),
    )
    func = _shared_kernel(body, S, (A, out))
    fixed = _with_barriers(func)
    assert _barrier_count(fixed) == 0
    a, result = _random(12, 8, 4), np.zeros(8, F32)
    run(fixed, [a, result])
    np.testing.assert_allclose(result, 2 * a.astype("float64").sum(axis=1), rtol=1e-5)


def test_uniform_code_alone_needs_no_barrier():
    A, out = Buffer("A", (const(8),), F32), Buffer("out", (const(8),), F32)
    S = Buffer("S", (const(8),), F32, "shared")
    i, j = loop_var("i"), loop_var("j")
    body = seq(
        _serial(i, 8, store(S, (i,), load(A, i))),
        _serial(j, 8, store(out, (j,), load(S, 7 - j))),
    )
    fixed = _with_barriers(_shared_kernel(body, S, (A, out)))
    assert _barrier_count(fixed) == 0
    a, result = _random(13, 8), np.zeros(8, F32)
    run(fixed, [a, result])
    np.testing.assert_array_equal(result, a[::-1])


def test_local_and_global_buffers_and_cpu_nests_get_no_barrier():
    cpu = matmul_tail()
    assert str(insert_barriers(cpu.body)) == str(cpu.body)
    # A staged copy through a local buffer: private per thread.
    A, out = Buffer("A", (N,), F32), Buffer("out", (N,), F32)
    t = Buffer("t", (const(1),), F32, "local")
    bx, tx = loop_var("bx"), loop_var("tx")
    g = bx * 8 + tx
    copy = If(g < N, Allocate(t, seq(store(t, (0,), load(A, g)), store(out, (g,), load(t, 0)))))
    nest = _block(bx, (N + 7) // 8, _thread(tx, 8, copy))
    assert str(insert_barriers(nest)) == str(nest)


def test_barriers_already_in_place_are_kept_and_none_added():
    func = tiled_matmul()
    assert str(insert_barriers(func.body)) == str(func.body)
    assert _barrier_count(_with_barriers(func)) == 2


@pytest.mark.parametrize(
    "build", [te_matmul, block_sum, guarded_rows, short_thread_loop, broadcast, rotating_rows]
)
def test_the_pass_is_idempotent(build):
    once = insert_barriers(build().body)
    assert str(insert_barriers(once)) == str(once)


def test_one_block_synchronises_its_global_temporaries():
    """Without block loops the function is one block, and a stage reading another's global
    temporary at other threads' elements needs a barrier, as with shared memory; with block
    loops the same buffer is not synchronised (other blocks are not ordered by a barrier)."""
    a = sl.placeholder((64,), name="A")
    t = sl.compute((64,), lambda i: a[i] * 2.0, name="T")
    c = sl.compute((64,), lambda i: t[63 - i] + 1.0, name="C")
    s = sl.create_schedule(c)
    s[t].bind(t.op.axis[0], sl.thread_axis("threadIdx.x"))
    s[c].bind(c.op.axis[0], sl.thread_axis("threadIdx.x"))
    one_block = sl.lower(s, [a, c]).body
    assert [x for x in walk_stmt(one_block) if isinstance(x, Barrier)]
    s = sl.create_schedule(c)
    for stage in (t, c):
        bo, to = s[stage].split(stage.op.axis[0], factor=16)
        s[stage].bind(bo, sl.thread_axis("blockIdx.x"))
        s[stage].bind(to, sl.thread_axis("threadIdx.x"))
    blocks = sl.lower(s, [a, c]).body
    assert not [x for x in walk_stmt(blocks) if isinstance(x, Barrier)]
