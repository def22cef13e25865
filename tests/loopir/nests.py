"""Loop nests built by hand from the loop-IR nodes, as the polyhedral layer would produce them.

Each builder returns a `LoweredFunc`; the options switch on the mistakes (a missing barrier, a
barrier under a guard) that the interpreter must catch.
"""

from __future__ import annotations

import schedlang as sl
from schedlang.ir.expr import Var, const
from schedlang.loopir.core.nodes import (
    Allocate,
    Barrier,
    Buffer,
    For,
    If,
    Load,
    LoweredFunc,
    Store,
    seq,
)

F32 = "float32"


def loop_var(name: str) -> Var:
    return Var(name, "int32", "loop")


def load(buffer: Buffer, *indices) -> Load:
    return Load(
        buffer, tuple(sl.const(i) if isinstance(i, int) else i for i in indices), buffer.dtype
    )


def store(buffer: Buffer, indices, value) -> Store:
    return Store(buffer, tuple(sl.const(i) if isinstance(i, int) else i for i in indices), value)


def zero() -> sl.Expr:
    return const(0.0, F32)


def matmul_tail(factor: int = 4, inner_kind: str = "unrolled") -> LoweredFunc:
    """C = A @ B with i split by `factor`, an exact tail guard and the reduction in place."""
    M, N, K = sl.var("M"), sl.var("N"), sl.var("K")
    A, B = Buffer("A", (M, K), F32), Buffer("B", (K, N), F32)
    C = Buffer("C", (M, N), F32)
    io, ii, j, k = loop_var("i.outer"), loop_var("i.inner"), loop_var("j"), loop_var("k")
    i = io * factor + ii
    update = store(C, (i, j), load(C, i, j) + load(A, i, k) * load(B, k, j))
    body = If(
        i < M,
        seq(store(C, (i, j), zero()), For(k, const(0), K, "serial", update)),
    )
    nest = For(
        io,
        const(0),
        (M + (factor - 1)) // factor,
        "parallel",
        For(j, const(0), N, "serial", For(ii, const(0), const(factor), inner_kind, body)),
    )
    return LoweredFunc("main", (A, B, C), (M, N, K), nest)


def staged_rotate(block: int = 16, barrier: bool = True, divergent: bool = False) -> LoweredFunc:
    """B[g] = A[g'] with g' the next element of g's block, staged through shared memory."""
    N = sl.var("N")
    A, B = Buffer("A", (N,), F32), Buffer("B", (N,), F32)
    S = Buffer("A.shared", (const(block),), F32, "shared")
    bx, tx = loop_var("bx"), loop_var("tx")
    g = bx * block + tx
    nxt = (tx + 1) % block
    copy = If(g < N, store(S, (tx,), load(A, g)))
    use = If(sl.all(g < N, bx * block + nxt < N), store(B, (g,), load(S, nxt)))
    sync = Barrier() if barrier else None
    if divergent and sync is not None:
        sync = If(tx < block // 2, sync)
    body = For(tx, const(0), const(block), "bound", seq(copy, sync, use), "threadIdx.x")
    nest = For(
        bx,
        const(0),
        (N + (block - 1)) // block,
        "bound",
        Allocate(S, body),
        "blockIdx.x",
    )
    return LoweredFunc("rotate", (A, B), (N,), nest)


def tiled_matmul(tile: int = 8, first_barrier: bool = True, second_barrier: bool = True):
    """C = A @ B with tile x tile blocks, both operands staged in shared memory per k tile and
    a per-thread accumulator in local memory (the classic CUDA matmul)."""
    M, N, K = sl.var("M"), sl.var("N"), sl.var("K")
    A, B = Buffer("A", (M, K), F32), Buffer("B", (K, N), F32)
    C = Buffer("C", (M, N), F32)
    As = Buffer("A.shared", (const(tile), const(tile)), F32, "shared")
    Bs = Buffer("B.shared", (const(tile), const(tile)), F32, "shared")
    acc = Buffer("C.local", (const(1),), F32, "local")
    by, bx, ty, tx = (loop_var(n) for n in ("by", "bx", "ty", "tx"))
    ko, ki = loop_var("k.outer"), loop_var("k.inner")
    row, col = by * tile + ty, bx * tile + tx
    a_val = sl.if_then_else(
        sl.all(row < M, ko * tile + tx < K), load(A, row, ko * tile + tx), zero()
    )
    b_val = sl.if_then_else(
        sl.all(ko * tile + ty < K, col < N), load(B, ko * tile + ty, col), zero()
    )
    update = store(acc, (0,), load(acc, 0) + load(As, ty, ki) * load(Bs, ki, tx))
    k_tile = seq(
        store(As, (ty, tx), a_val),
        store(Bs, (ty, tx), b_val),
        Barrier() if first_barrier else None,
        For(ki, const(0), const(tile), "serial", update),
        Barrier() if second_barrier else None,
    )
    threads = Allocate(
        acc,
        seq(
            store(acc, (0,), zero()),
            For(ko, const(0), (K + (tile - 1)) // tile, "serial", k_tile),
            If(sl.all(row < M, col < N), store(C, (row, col), load(acc, 0))),
        ),
    )
    nest = For(
        by,
        const(0),
        (M + (tile - 1)) // tile,
        "bound",
        For(
            bx,
            const(0),
            (N + (tile - 1)) // tile,
            "bound",
            Allocate(
                As,
                Allocate(
                    Bs,
                    For(
                        ty,
                        const(0),
                        const(tile),
                        "bound",
                        For(tx, const(0), const(tile), "bound", threads, "threadIdx.x"),
                        "threadIdx.y",
                    ),
                ),
            ),
            "blockIdx.x",
        ),
        "blockIdx.y",
    )
    return LoweredFunc("matmul", (A, B, C), (M, N, K), nest)
