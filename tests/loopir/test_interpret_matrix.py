"""Tensor-core matrix ops (`MatrixOp`) in the loop-IR interpreter: results against numpy, the
real fragment layouts, and the warp-level mistakes the interpreter must catch."""

from __future__ import annotations

import ml_dtypes
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
    LoweredFunc,
    MatrixOp,
    Tile,
    seq,
)
from schedlang.loopir.interpret import RaceError, run
from schedlang.loopir.memory.fragments import layout

from .nests import load, loop_var, store

F16, F32 = "float16", "float32"
TX, TY, KO = loop_var("tx"), loop_var("ty"), loop_var("k.outer")


def _c(x):
    return const(x) if isinstance(x, int) else x


def _buffer(name: str, shape, dtype: str, scope: str = "global") -> Buffer:
    return Buffer(name, tuple(const(n) for n in shape), dtype, scope)


def _tile(buffer: Buffer, base, shape, dims=None) -> Tile:
    ndim = len(buffer.shape)
    return Tile(buffer, tuple(_c(b) for b in base), dims or (ndim - 2, ndim - 1), shape)


def _fragments(n: int = 16, ab: str = F16, acc: str = F32, rows: int = 16):
    return (
        _buffer("A.frag", (16, 16), ab, "wmma.matrix_a"),
        _buffer("B.frag", (16, n), ab, "wmma.matrix_b"),
        _buffer("C.frag", (rows, n), acc, "wmma.accumulator"),
    )


def _allocate(buffers, body):
    for b in reversed(buffers):
        body = Allocate(b, body)
    return body


def _threads(body, warps: int = 1, x: int = 32):
    """A block of `warps` warps (threadIdx.y) of `x` threads (threadIdx.x)."""
    inner = For(TX, const(0), const(x), "bound", body, "threadIdx.x")
    return For(TY, const(0), const(warps), "bound", inner, "threadIdx.y")


def _gemm_ops(a_tile, b_tile, frags, out_tile, k_tiles: int, row=0, fill=True):
    """C.frag := 0 (unless not `fill`); for each k tile: load A and B, mma; store C.frag to
    `out_tile`."""
    a, b, c = frags
    n = b.shape[1].value
    step = seq(
        MatrixOp("load", _tile(a, (0, 0), (16, 16)), (a_tile(KO * 16),)),
        MatrixOp("load", _tile(b, (0, 0), (16, n)), (b_tile(KO * 16),)),
        MatrixOp(
            "mma",
            _tile(c, (row, 0), (16, n)),
            (_tile(a, (0, 0), (16, 16)), _tile(b, (0, 0), (16, n))),
        ),
    )
    zero = MatrixOp("fill", _tile(c, (row, 0), (16, n)), value=const(0.0, c.dtype))
    return seq(
        zero if fill else None,
        For(KO, const(0), const(k_tiles), "serial", step),
        MatrixOp("store", out_tile, (_tile(c, (row, 0), (16, n)),)),
    )


def _gemm(m, n, k, transposed_b=False, ab=F16, acc=F32, out=F32, staged=False, barrier=True):
    """out = A @ B (B given as [k][n], or as [n][k] and read with dims (1, 0)) with one warp
    per 16 rows, A and B read from global memory or staged through shared memory."""
    A = _buffer("A", (m, k), ab)
    B = _buffer("B", (n, k) if transposed_b else (k, n), ab)
    C = _buffer("C", (m, n), out)
    frags = _fragments(n, ab, acc)
    sources = (A, B)
    copies = []
    threads = 32 * (m // 16)
    if staged:
        sources = tuple(
            _buffer(f"{x.name}.shared", [s.value for s in x.shape], ab, "shared") for x in (A, B)
        )
        for src, dst in zip((A, B), sources):
            rows, cols = (s.value for s in src.shape)
            i = loop_var(f"i.{src.name}")
            flat = i * threads + TY * 32 + TX
            copy = store(dst, (flat // cols, flat % cols), load(src, flat // cols, flat % cols))
            copies.append(For(i, const(0), const(rows * cols // threads), "serial", copy))
    sa, sb = sources
    row = TY * 16

    def a_tile(k0):
        return _tile(sa, (row, k0), (16, 16))

    def b_tile(k0):
        if transposed_b:
            return _tile(sb, (0, k0), (16, n), dims=(1, 0))
        return _tile(sb, (k0, 0), (16, n))

    ops = _gemm_ops(a_tile, b_tile, frags, _tile(C, (row, 0), (16, n)), k // 16)
    body = seq(*copies, Barrier() if staged and barrier else None, ops)
    nest = _allocate(frags, _threads(body, warps=m // 16))
    if staged:
        nest = _allocate(sources, nest)
    return LoweredFunc("gemm", (A, B, C), (), nest)


def _random(gen, *shape, dtype=F16):
    return gen.uniform(-1, 1, shape).astype(
        np.dtype(ml_dtypes.bfloat16) if dtype == "bf16" else dtype
    )


def _expected(a, b):
    return a.astype(F32) @ b.astype(F32)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("transposed_b", [False, True])
@pytest.mark.parametrize("n", [16, 8])
def test_gemm_matches_numpy(n, transposed_b, staged):
    gen = np.random.default_rng(n + 2 * transposed_b + 4 * staged)
    m, k = 16, 48
    a = _random(gen, m, k)
    b = _random(gen, k, n)
    c = np.full((m, n), np.nan, F32)
    b_arg = np.ascontiguousarray(b.T) if transposed_b else b
    run(_gemm(m, n, k, transposed_b, staged=staged), [a, b_arg, c])
    np.testing.assert_allclose(c, _expected(a, b), rtol=1e-5, atol=1e-5)


def test_two_warps_compute_their_own_rows():
    gen = np.random.default_rng(7)
    a, b = _random(gen, 32, 32), _random(gen, 32, 16)
    c = np.full((32, 16), np.nan, F32)
    run(_gemm(32, 16, 32, staged=True), [a, b, c])
    np.testing.assert_allclose(c, _expected(a, b), rtol=1e-5, atol=1e-5)


def test_bfloat16_operands():
    gen = np.random.default_rng(8)
    a, b = _random(gen, 16, 32, dtype="bf16"), _random(gen, 32, 16, dtype="bf16")
    c = np.full((16, 16), np.nan, F32)
    run(_gemm(16, 16, 32, ab="bfloat16"), [a, b, c])
    np.testing.assert_allclose(c, _expected(a, b), rtol=1e-5, atol=1e-5)


def test_float16_accumulator_rounds_once_per_mma():
    gen = np.random.default_rng(9)
    a, b = _random(gen, 16, 32), _random(gen, 32, 8)
    c = np.full((16, 8), np.nan, F16)
    run(_gemm(16, 8, 32, acc=F16, out=F16), [a, b, c])
    acc = np.zeros((16, 8), F16)
    for k0 in (0, 16):
        part = _expected(a[:, k0 : k0 + 16], b[k0 : k0 + 16])
        acc = (acc.astype(F32) + part).astype(F16)
    np.testing.assert_allclose(c.astype(F32), acc.astype(F32), rtol=2e-3, atol=2e-3)


def _single(ops, buffers, params, warps=1, x=32):
    return LoweredFunc("f", params, (), _allocate(buffers, _threads(ops, warps, x)))


def test_transposed_source_gives_the_transposed_matrix():
    # A read with dims (1, 0): the fragment holds A.T, so the mma computes A.T @ B.
    gen = np.random.default_rng(10)
    A, B, C = _buffer("A", (16, 16), F16), _buffer("B", (16, 16), F16), _buffer("C", (16, 16), F32)
    a_frag, b_frag, c_frag = _fragments()
    ops = seq(
        MatrixOp("fill", _tile(c_frag, (0, 0), (16, 16)), value=const(0.0, F32)),
        MatrixOp("load", _tile(a_frag, (0, 0), (16, 16)), (_tile(A, (0, 0), (16, 16), (1, 0)),)),
        MatrixOp("load", _tile(b_frag, (0, 0), (16, 16)), (_tile(B, (0, 0), (16, 16)),)),
        MatrixOp(
            "mma",
            _tile(c_frag, (0, 0), (16, 16)),
            (_tile(a_frag, (0, 0), (16, 16)), _tile(b_frag, (0, 0), (16, 16))),
        ),
        MatrixOp("store", _tile(C, (0, 0), (16, 16)), (_tile(c_frag, (0, 0), (16, 16)),)),
    )
    a, b = _random(gen, 16, 16), _random(gen, 16, 16)
    c = np.full((16, 16), np.nan, F32)
    run(_single(ops, (a_frag, b_frag, c_frag), (A, B, C)), [a, b, c])
    np.testing.assert_allclose(c, _expected(a.T, b), rtol=1e-5, atol=1e-5)
    assert not np.allclose(c, _expected(a, b), rtol=1e-2)


def test_accumulator_lanes_hold_the_mma_layout():
    # Storing the accumulator to local memory writes each lane's own copy with the elements
    # that lane holds: exactly fragments.layout, the m16n8k16 layout.
    out = _buffer("out", (32, 16, 8), F32)
    local = _buffer("C.local", (16, 8), F32, "local")
    c_frag = _buffer("C.frag", (16, 8), F32, "wmma.accumulator")
    r, col = loop_var("r"), loop_var("c")
    copy = store(out, (TX, r, col), load(local, r, col))
    ops = seq(
        MatrixOp("fill", _tile(c_frag, (0, 0), (16, 8)), value=const(2.5, F32)),
        MatrixOp("store", _tile(local, (0, 0), (16, 8)), (_tile(c_frag, (0, 0), (16, 8)),)),
        For(r, const(0), const(16), "serial", For(col, const(0), const(8), "serial", copy)),
    )
    result = np.zeros((32, 16, 8), F32)
    run(_single(ops, (c_frag, local), (out,)), [result])
    held = np.zeros((32, 16, 8), bool)
    for lane, slots in enumerate(layout("wmma.accumulator", (16, 8))):
        for row, column in slots:
            held[lane, row, column] = True
    assert (result[held] == 2.5).all() and np.isnan(result[~held]).all()


def test_load_from_local_memory_and_a_second_accumulator_tile():
    # A from each thread's own local copy; the accumulator is a 32 x 16 fragment whose second
    # tile (rows 16..31) is used after NaN fills the first, so the tile offset inside each
    # lane's storage matters.
    gen = np.random.default_rng(11)
    A, B, C = _buffer("A", (16, 16), F16), _buffer("B", (16, 16), F16), _buffer("C", (16, 16), F32)
    a_local = _buffer("A.local", (16, 16), F16, "local")
    a_frag, b_frag, c_frag = _fragments(rows=32)
    r, col = loop_var("r"), loop_var("c")
    fill_local = store(a_local, (r, col), load(A, r, col))
    ops = seq(
        For(r, const(0), const(16), "serial", For(col, const(0), const(16), "serial", fill_local)),
        MatrixOp("fill", _tile(c_frag, (16, 0), (16, 16)), value=const(1.0, F32)),
        MatrixOp("fill", _tile(c_frag, (0, 0), (16, 16)), value=const(float("nan"), F32)),
        MatrixOp("load", _tile(a_frag, (0, 0), (16, 16)), (_tile(a_local, (0, 0), (16, 16)),)),
        MatrixOp("load", _tile(b_frag, (0, 0), (16, 16)), (_tile(B, (0, 0), (16, 16)),)),
        MatrixOp(
            "mma",
            _tile(c_frag, (16, 0), (16, 16)),
            (_tile(a_frag, (0, 0), (16, 16)), _tile(b_frag, (0, 0), (16, 16))),
        ),
        MatrixOp("store", _tile(C, (0, 0), (16, 16)), (_tile(c_frag, (16, 0), (16, 16)),)),
    )
    a, b = _random(gen, 16, 16), _random(gen, 16, 16)
    c = np.full((16, 16), np.nan, F32)
    run(_single(ops, (a_frag, b_frag, c_frag, a_local), (A, B, C)), [a, b, c])
    np.testing.assert_allclose(c, _expected(a, b) + 1, rtol=1e-5, atol=1e-5)


def test_an_accumulator_never_filled_gives_nan():
    c = np.zeros((16, 16), F32)
    run(_one_mma(fill=False), [*_arrays()[:2], c])
    assert np.isnan(c).all()


def _one_mma(guard=None, x=32, base=None, fill=True):
    A, B, C = _buffer("A", (16, 16), F16), _buffer("B", (16, 16), F16), _buffer("C", (16, 16), F32)
    frags = _fragments()
    ops = _gemm_ops(
        lambda k0: _tile(A, (0, k0) if base is None else base, (16, 16)),
        lambda k0: _tile(B, (k0, 0), (16, 16)),
        frags,
        _tile(C, (0, 0), (16, 16)),
        1,
        fill=fill,
    )
    if guard is not None:
        ops = If(guard, ops)
    return _single(ops, frags, (A, B, C), x=x)


def _arrays():
    gen = np.random.default_rng(13)
    return [_random(gen, 16, 16), _random(gen, 16, 16), np.full((16, 16), np.nan, F32)]


def test_divergent_warp_raises():
    with pytest.raises(sl.InternalError, match=r"divergent warp collective: thread \(x=0.*x=16"):
        run(_one_mma(guard=TX < 16), _arrays())


def test_block_not_32_threads_wide_raises():
    with pytest.raises(sl.InternalError, match="threadIdx.x extent is exactly 32.* is 16"):
        run(_one_mma(x=16), _arrays())


def test_base_differing_within_a_warp_raises():
    with pytest.raises(sl.InternalError, match="base of 'A' in load_matrix differs within a warp"):
        run(_one_mma(base=(const(0), TX // 16)), _arrays())


def test_out_of_bounds_tile_raises():
    with pytest.raises(sl.InternalError, match=r"out-of-bounds access A\[.*load_matrix of warp 0"):
        run(_one_mma(base=(const(8), const(0))), _arrays())


def test_load_of_a_fragment_raises():
    out = _buffer("out", (1,), F32)
    frag = _buffer("C.frag", (16, 16), F32, "wmma.accumulator")
    func = _single(store(out, (0,), load(frag, 0, 0)), (frag,), (out,))
    with pytest.raises(sl.InternalError, match="at one slot"):
        run(func, [np.zeros(1, F32)])


def test_shared_tile_written_without_barrier_is_a_race():
    gen = np.random.default_rng(14)
    a, b = _random(gen, 16, 16), _random(gen, 16, 16)
    c = np.full((16, 16), np.nan, F32)
    with pytest.raises(RaceError, match=r"'A.shared' .* load_matrix of warp 0 reads it after"):
        run(_gemm(16, 16, 16, staged=True, barrier=False), [a, b, c])


def _blocks_with_ops_outside_thread_loops(barrier: bool, overwrite: bool = False):
    """C[:, 16 bx:] = A @ B[:, 16 bx:] for two blocks: the threads stage A in shared memory,
    then the matrix ops run outside any thread loop (every thread of the block runs them);
    with `overwrite` the threads then write A.shared again."""
    A, B, C = _buffer("A", (16, 16), F16), _buffer("B", (16, 32), F16), _buffer("C", (16, 32), F32)
    As = _buffer("A.shared", (16, 16), F16, "shared")
    frags = _fragments()
    bx, i, j = loop_var("bx"), loop_var("i"), loop_var("j")
    flat = i * 32 + TX
    copy = store(As, (flat // 16, flat % 16), load(A, flat // 16, flat % 16))
    loop = For(i, const(0), const(8), "serial", copy)
    stage = For(TX, const(0), const(32), "bound", loop, "threadIdx.x")
    ops = _gemm_ops(
        lambda k0: _tile(As, (0, k0), (16, 16)),
        lambda k0: _tile(B, (k0, bx * 16), (16, 16)),
        frags,
        _tile(C, (0, bx * 16), (16, 16)),
        1,
    )
    again = store(As, (j // 16, j % 16), const(0.0, F16))
    after = For(j, const(0), const(32), "bound", again, "threadIdx.x") if overwrite else None
    body = seq(Allocate(As, seq(stage, Barrier() if barrier else None, ops, after)))
    nest = For(bx, const(0), const(2), "bound", _allocate(frags, body), "blockIdx.x")
    return LoweredFunc("f", (A, B, C), (), nest)


def test_ops_outside_thread_loops_run_on_every_warp_of_each_block():
    gen = np.random.default_rng(15)
    a, b = _random(gen, 16, 16), _random(gen, 16, 32)
    c = np.full((16, 32), np.nan, F32)
    run(_blocks_with_ops_outside_thread_loops(barrier=True), [a, b, c])
    np.testing.assert_allclose(c, _expected(a, b), rtol=1e-5, atol=1e-5)
    with pytest.raises(RaceError, match=r"load_matrix of warp 0 reads it after thread \(x="):
        run(_blocks_with_ops_outside_thread_loops(barrier=False), [a, b, c])
    with pytest.raises(RaceError, match="writes it after other threads read it"):
        run(_blocks_with_ops_outside_thread_loops(barrier=True, overwrite=True), [a, b, c])
