"""Asynchronous copies (`AsyncCopy`, `AsyncCommit`, `AsyncWait`) in the code generators:
hand-built kernels whose threads stage a global tile in shared memory with ``cp.async`` (16-byte
``.cg``, 8- and 4-byte ``.ca``), commit, wait, meet at a barrier and read the tile back. Checked
as PTX that ptxas accepts, for the alignment they must prove, for the narrowing of copies
outside thread loops, against numpy on a GPU (a three-stage pipeline among them), and on the
CPU, where a copy happens at once."""

from __future__ import annotations

import re

import numpy as np
import pytest

from schedlang.codegen.fingerprint import fingerprint
from schedlang.codegen.llvm.text import module_text
from schedlang.codegen.nvptx import compile as nvptx_compile
from schedlang.codegen.nvptx.compile import compile_cuda, machine
from schedlang.codegen.nvptx.compiled import CompiledCuda
from schedlang.codegen.nvptx.module import build_module
from schedlang.codegen.nvptx.plan import plan_kernels
from schedlang.errors import InternalError, LoweringError
from schedlang.ir import dtype as dt
from schedlang.ir.expr import Cast, Expr, Var, const
from schedlang.loopir.core.nodes import (
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    Buffer,
    For,
    If,
    Load,
    LoweredFunc,
    Stmt,
    Store,
    seq,
)
from schedlang.loopir.core.visit import walk_stmt

from .ptxas import assemble

CG = "cp.async.cg.shared.global"
CA = "cp.async.ca.shared.global"


def loop_var(name: str) -> Var:
    return Var(name, "int32", "loop")


def c(value: int) -> Expr:
    return const(value, "int32")


def lanes_of(dtype: str, nbytes: int) -> int:
    return nbytes // dt.itemsize(dtype)


def threads(tx: Var, count: int, body: Stmt) -> For:
    return For(tx, c(0), c(count), "bound", body, "threadIdx.x")


def issue(
    dst: Buffer, dst_at, src: Buffer, src_at, tx: Var, count: int, lanes: int, shift: int = 0
) -> Stmt:
    """The threads copy a rows x cols tile of `src` into `dst`, `lanes` elements a copy, chunk
    ``e * count + tx`` by thread tx: ``dst_at(row, col)`` and ``src_at(row, col)`` give the
    indices of the tile element (row, col). `shift` moves the start of every copy by that many
    elements (to make it unaligned)."""
    rows, cols = (int(n.value) for n in dst.shape[-2:])
    per_row = cols // lanes
    chunks = rows * per_row
    e = loop_var(f"{dst.name}.e")
    chunk = e * count + tx
    row, col = chunk // per_row, chunk % per_row * lanes + shift
    copy = AsyncCopy(dst, dst_at(row, col), src, src_at(row, col), lanes)
    body = copy if chunks % count == 0 else If(chunk < chunks, copy)
    return For(e, c(0), c(-(-chunks // count)), "serial", body)


def staged(
    dtype: str = "float32",
    nbytes: int = 16,
    rows: int = 8,
    cols: int = 32,
    count: int = 64,
    blocks: int = 2,
    shift: int = 0,
    waits_in_threads: bool = False,
) -> LoweredFunc:
    """B[r, c] = 2 * A[r', c'] (r', c' the element mirrored in the block's tile): each block
    stages its rows x cols tile of A in shared memory with asynchronous copies of `nbytes`,
    then every thread reads elements other threads copied. Commit and wait stand outside the
    thread loops (every thread runs them), or inside with `waits_in_threads`."""
    lanes = lanes_of(dtype, nbytes)
    a = Buffer("A", (c(blocks * rows), c(cols)), dtype)
    b = Buffer("B", (c(blocks * rows), c(cols)), dtype)
    tile = Buffer("A.shared", (c(rows), c(cols)), dtype, "shared")
    bx, tx, tx2, e = loop_var("bx"), loop_var("tx"), loop_var("tx2"), loop_var("e")
    copies = issue(
        tile, lambda r, k: (r, k), a, lambda r, k: (bx * rows + r, k), tx, count, lanes, shift
    )
    waits = seq(AsyncCommit(), AsyncWait(0))
    fill = threads(tx, count, seq(copies, waits)) if waits_in_threads else None
    fill = fill or seq(threads(tx, count, copies), waits)
    flat = e * count + tx2
    row, col = flat // cols, flat % cols
    mirrored = Load(tile, (c(rows - 1) - row, c(cols - 1) - col), dtype)
    out = Store(b, (bx * rows + row, col), mirrored * const(2.0, dtype))
    per_thread = -(-rows * cols // count)
    read = For(e, c(0), c(per_thread), "serial", If(flat < rows * cols, out))
    body = Allocate(tile, seq(fill, Barrier(), threads(tx2, count, read)))
    return LoweredFunc("staged", (a, b), (), For(bx, c(0), c(blocks), "bound", body, "blockIdx.x"))


def pipelined(
    dtype: str = "float16",
    nbytes: int = 16,
    rows: int = 32,
    step: int = 32,
    k_tiles: int = 5,
    count: int = 32,
    blocks: int = 2,
    stages: int = 3,
) -> LoweredFunc:
    """C[r] = sum over k of A[r, k] (in float32), A's k dimension staged `step` columns at a
    time through `stages` shared buffers: the prologue issues `stages` - 1 groups; each
    iteration waits for its own (``wait_group(stages - 2)``), meets the others at a barrier
    (after which the buffer the previous iteration read is free), issues the copy `stages` - 1
    tiles ahead (an empty group near the end, so the count stays right), commits, and thread r
    sums row r of its tile, whose elements other threads copied."""
    lanes = lanes_of(dtype, nbytes)
    a = Buffer("A", (c(blocks * rows), c(k_tiles * step)), dtype)
    out = Buffer("C", (c(blocks * rows),), "float32")
    ring = Buffer("A.ring", (c(stages), c(rows), c(step)), dtype, "shared")
    bx, k, j = loop_var("bx"), loop_var("k"), loop_var("j")
    tx = [loop_var(f"tx{n}") for n in range(stages + 2)]

    def load_tile(kt: Expr, t: Var) -> Stmt:
        return issue(
            ring,
            lambda r, col: (kt % stages, r, col),
            a,
            lambda r, col: (bx * rows + r, kt * step + col),
            t,
            count,
            lanes,
        )

    zero = Store(out, (bx * rows + tx[0],), const(0.0, "float32"))
    prologue = [threads(tx[0], rows, zero)]
    for s in range(stages - 1):
        prologue += [threads(tx[1 + s], count, load_tile(c(s), tx[1 + s])), AsyncCommit()]
    ahead = k + (stages - 1)
    row_sum = Load(out, (bx * rows + tx[-1],), "float32")
    element = Load(ring, (k % stages, tx[-1], j), dtype)
    add = Store(out, (bx * rows + tx[-1],), row_sum + _as_float32(element))
    body = seq(
        AsyncWait(stages - 2),
        Barrier(),
        If(ahead < k_tiles, threads(tx[-2], count, load_tile(ahead, tx[-2]))),
        AsyncCommit(),
        threads(tx[-1], rows, For(j, c(0), c(step), "serial", add)),
    )
    main = For(k, c(0), c(k_tiles), "serial", body)
    kernel = Allocate(ring, seq(*prologue, main))
    top = For(bx, c(0), c(blocks), "bound", kernel, "blockIdx.x")
    return LoweredFunc("pipelined", (a, out), (), top)


def _as_float32(e: Expr) -> Expr:
    return e if e.dtype == "float32" else Cast(e, "float32")


def ptx_of(func: LoweredFunc, arch: str = "sm_90") -> str:
    return compiled(func, arch).ptx


def compiled(func: LoweredFunc, arch: str = "sm_90") -> CompiledCuda:
    """`func` to PTX as `compile_cuda` does, but without the loop-IR passes for GPUs: the
    statements here are what code generation sees."""
    plan = plan_kernels(func)
    tm = machine(arch)
    text = module_text(build_module(plan, arch, str(tm.target_data)))
    return CompiledCuda(
        plan, arch, text, nvptx_compile._ptx(text, [k.name for k in plan.kernels], tm)
    )


# -- PTX -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "nbytes", "instruction"),
    [
        ("float32", 16, rf"{CG} \[[^]]+\], \[[^]]+\], 16;"),
        ("float16", 16, rf"{CG} \[[^]]+\], \[[^]]+\], 16;"),
        ("float32", 8, rf"{CA} \[[^]]+\], \[[^]]+\], 8;"),
        ("float16", 4, rf"{CA} \[[^]]+\], \[[^]]+\], 4;"),
        ("float32", 4, rf"{CA} \[[^]]+\], \[[^]]+\], 4;"),
    ],
)
def test_staged_tile_becomes_cp_async_and_assembles(dtype, nbytes, instruction):
    ptx = ptx_of(staged(dtype, nbytes))
    assert re.search(instruction, ptx), ptx
    assert "cp.async.commit_group;" in ptx
    assert re.search(r"cp\.async\.wait_group\s+0;", ptx)
    assert "bar.sync" in ptx
    assert assemble(ptx).stack_bytes == 0


def test_commit_and_wait_inside_the_thread_loop():
    ptx = ptx_of(staged(waits_in_threads=True, count=32))
    assert CG in ptx and "cp.async.commit_group;" in ptx
    assemble(ptx)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_pipeline_waits_for_all_but_one_group(dtype):
    ptx = ptx_of(pipelined(dtype))
    assert CG in ptx
    assert re.search(r"cp\.async\.wait_group\s+1;", ptx)
    assert len(re.findall(r"cp\.async\.commit_group;", ptx)) >= 3  # prologue 2, the loop 1
    assemble(ptx)


def test_padded_rows_keep_copies_aligned():
    """Strided shared rows (padding of 8 floats: 32 bytes) still prove 16 bytes."""
    func = staged()
    tile = next(s.buffer for s in walk_stmt(func.body) if isinstance(s, Allocate))
    padded = Buffer(tile.name, tile.shape, tile.dtype, "shared", (c(40), c(1)))
    ptx = ptx_of(_rebuffer(func, tile, padded))
    assert CG in ptx
    assemble(ptx)


@pytest.mark.usefixtures("all_dynamic")
def test_copies_into_dynamic_shared_memory():
    ptx = ptx_of(pipelined())
    assert CG in ptx and ".extern .shared" in ptx
    assemble(ptx)


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "nbytes", "shift"), [("float32", 16, 2), ("float16", 8, 1)])
def test_an_unaligned_copy_is_refused(dtype, nbytes, shift):
    lanes = lanes_of(dtype, nbytes)
    func = staged(dtype, nbytes, cols=32 + lanes, shift=shift)
    with pytest.raises(LoweringError, match=rf"multiple of {lanes} elements") as error:
        ptx_of(func)
    assert "'A'" in str(error.value) and "'A.shared'" in str(error.value)


def test_the_row_length_decides_the_alignment():
    """A copy at a multiple of 4 columns of rows of 36 floats (144 bytes) starts at a multiple
    of 16 bytes; with rows of 34 floats (136 bytes), row r starts at 136 r: only 8 proven."""
    assert CG in ptx_of(staged("float32", 16, cols=36, count=9))
    with pytest.raises(LoweringError, match="multiple of 4 elements"):
        ptx_of(staged("float32", 16, cols=34, count=8))


def test_cp_async_needs_sm_80():
    with pytest.raises(LoweringError, match="sm_80"):
        ptx_of(staged(), arch="sm_75")


def test_a_copy_from_shared_to_global_is_an_internal_error():
    func = staged()
    copy = next(s for s in walk_stmt(func.body) if isinstance(s, AsyncCopy))
    swapped = AsyncCopy(copy.src, copy.src_index, copy.dst, copy.dst_index, copy.lanes)
    with pytest.raises(InternalError, match="global to shared"):
        ptx_of(_replace(func, copy, swapped))


def test_a_copy_of_12_bytes_is_an_internal_error():
    func = staged()
    copy = next(s for s in walk_stmt(func.body) if isinstance(s, AsyncCopy))
    odd = AsyncCopy(copy.dst, copy.dst_index, copy.src, copy.src_index, 3)
    with pytest.raises(InternalError, match="4, 8 or 16 bytes"):
        ptx_of(_replace(func, copy, odd))


# -- one thread for uniform copies -----------------------------------------------------------


def broadcast() -> LoweredFunc:
    """B[t, j] = A[j]: one 16-byte copy outside the thread loops, read by all 64 threads."""
    a = Buffer("A", (c(4),), "float32")
    b = Buffer("B", (c(64), c(4)), "float32")
    tile = Buffer("A.shared", (c(4),), "float32", "shared")
    tx, j = loop_var("tx"), loop_var("j")
    out = For(j, c(0), c(4), "serial", Store(b, (tx, j), Load(tile, (j,), "float32")))
    copy = AsyncCopy(tile, (c(0),), a, (c(0),), 4)
    body = seq(copy, AsyncCommit(), AsyncWait(0), Barrier(), threads(tx, 64, out))
    return LoweredFunc("broadcast", (a, b), (), Allocate(tile, body))


def test_a_copy_outside_thread_loops_runs_on_one_thread_but_every_thread_waits():
    """A copy outside the thread loops would be issued by every thread alike: like a store, it
    is narrowed to one thread; commit and wait stay with all threads (each waits its own)."""
    func = broadcast()
    (kernel,) = plan_kernels(func).kernels
    narrowed = [
        s for s in walk_stmt(kernel.body) if isinstance(s, For) and s.var.name.endswith(".uniform")
    ]
    assert len(narrowed) == 1 and isinstance(narrowed[0].body, AsyncCopy)
    for s in walk_stmt(kernel.body):
        if isinstance(s, For) and s.var.name.endswith(".uniform"):
            assert not any(isinstance(n, (AsyncCommit, AsyncWait)) for n in walk_stmt(s))
    ptx = ptx_of(func)
    assert CG in ptx
    assemble(ptx)


def test_the_fingerprint_sees_copies_and_waits():
    one, other = staged(), staged()
    assert fingerprint(one, "k") == fingerprint(other, "k")
    wait = next(s for s in walk_stmt(one.body) if isinstance(s, AsyncWait))
    assert fingerprint(_replace(one, wait, AsyncWait(1)), "k") != fingerprint(one, "k")
    assert fingerprint(staged(nbytes=8), "k") != fingerprint(one, "k")


# -- CPU -------------------------------------------------------------------------------------


def cpu_staged(
    dtype: str, nbytes: int, rows: int = 6, cols: int = 16, kind="serial"
) -> LoweredFunc:
    """`staged` without threads: the tile copied a chunk at a time (rows in a loop of `kind`),
    then read mirrored."""
    lanes = lanes_of(dtype, nbytes)
    a = Buffer("A", (c(rows), c(cols)), dtype)
    b = Buffer("B", (c(rows), c(cols)), dtype)
    tile = Buffer("A.shared", (c(rows), c(cols)), dtype, "shared")
    r, q, r2, col = loop_var("r"), loop_var("q"), loop_var("r2"), loop_var("col")
    copy = AsyncCopy(tile, (r, q * lanes), a, (r, q * lanes), lanes)
    copies = For(r, c(0), c(rows), kind, For(q, c(0), c(cols // lanes), "serial", copy))
    mirrored = Load(tile, (c(rows - 1) - r2, c(cols - 1) - col), dtype)
    out = Store(b, (r2, col), mirrored * const(2.0, dtype))
    read = For(r2, c(0), c(rows), "serial", For(col, c(0), c(cols), "serial", out))
    body = Allocate(tile, seq(copies, AsyncCommit(), AsyncWait(0), Barrier(), read))
    return LoweredFunc("cpu_staged", (a, b), (), body)


@pytest.mark.parametrize(
    ("dtype", "nbytes", "kind"),
    [
        ("float32", 16, "serial"),
        ("float32", 8, "serial"),
        ("float16", 16, "serial"),
        ("float16", 4, "serial"),
        ("float32", 16, "parallel"),  # the copies in a task: it must be given both buffers
    ],
)
def test_the_cpu_copies_at_once(dtype, nbytes, kind):
    from schedlang.runtime.kernel import Kernel

    func = cpu_staged(dtype, nbytes, kind=kind)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (6, 16)).astype(dt.to_numpy(dtype))
    y = np.full_like(x, np.nan)
    kernel = Kernel.for_cpu(func)
    kernel(x, y)
    np.testing.assert_array_equal(y, x[::-1, ::-1] * x.dtype.type(2))
    assert "load <" in kernel.llvm_ir  # one vector load per copy


# -- on a GPU, and the same kernels in the interpreter ----------------------------------------

STAGED_CASES = [
    {"dtype": "float32", "nbytes": 16},
    {"dtype": "float16", "nbytes": 16},
    {"dtype": "float32", "nbytes": 8},
    {"dtype": "float32", "nbytes": 4},
    {"dtype": "float16", "nbytes": 8},
    {"dtype": "float16", "nbytes": 4},
    {"dtype": "float32", "nbytes": 16, "count": 48},  # a guarded tail of chunks
    {"dtype": "float32", "nbytes": 16, "waits_in_threads": True},
]
PIPELINE_CASES = [
    {"dtype": "float16"},
    {"dtype": "float32"},
    {"dtype": "float32", "nbytes": 8, "k_tiles": 7},
    {"dtype": "float16", "k_tiles": 2},
    {"dtype": "float16", "stages": 4, "k_tiles": 9, "count": 64},
]


def staged_case(case: dict) -> tuple[LoweredFunc, list[np.ndarray], np.ndarray]:
    """The kernel of `case`, its arguments (random input, NaN-poisoned output), the answer."""
    func = staged(**case)
    shape = [int(n.value) for n in func.params[0].shape]
    numpy_t = dt.to_numpy(func.params[0].dtype)
    x = np.random.default_rng(7).uniform(-1, 1, shape).astype(numpy_t)
    tiles = np.split(x, shape[0] // 8)  # `staged`'s 8 rows a block
    want = np.concatenate([t[::-1, ::-1] for t in tiles]) * x.dtype.type(2)
    return func, [x, np.full(shape, np.nan, numpy_t)], want


def pipeline_case(case: dict) -> tuple[LoweredFunc, list[np.ndarray], np.ndarray]:
    func = pipelined(**case)
    a_buf, c_buf = func.params
    shape = [int(n.value) for n in a_buf.shape]
    x = np.random.default_rng(11).uniform(-1, 1, shape).astype(dt.to_numpy(a_buf.dtype))
    out = np.full([int(n.value) for n in c_buf.shape], np.nan, np.float32)
    return func, [x, out], x.astype(np.float64).sum(axis=1)


def broadcast_case(case: dict) -> tuple[LoweredFunc, list[np.ndarray], np.ndarray]:
    del case
    x = np.random.default_rng(13).uniform(-1, 1, 4).astype(np.float32)
    return broadcast(), [x, np.full((64, 4), np.nan, np.float32)], np.tile(x, (64, 1))


CASES = [(staged_case, case) for case in STAGED_CASES]
CASES += [(pipeline_case, case) for case in PIPELINE_CASES] + [(broadcast_case, {})]
CASE_IDS = [f"{make.__name__[:-5]}{case}" for make, case in CASES]


def _check(got: np.ndarray, want: np.ndarray) -> None:
    assert not np.isnan(got).any(), "some outputs were never written"
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(("make", "case"), CASES, ids=CASE_IDS)
def test_the_kernels_are_right_in_the_interpreter(make, case):
    """The interpreter models cp.async (a copy lands at the wait for its group; reading it
    earlier is a race), so the kernels the GPU tests run are checked here without one."""
    from schedlang.loopir.interpret import run

    func, arrays, want = make(case)
    run(func, arrays, {})
    _check(arrays[1], want)


def _run_on_gpu(func: LoweredFunc, arrays: list[np.ndarray], compile_with) -> np.ndarray:
    import schedlang as sl
    from schedlang.runtime.cuda.kernel import CudaKernel

    kernel = CudaKernel(func, compile_with(func), "cuda")
    placed = [sl.array(x) for x in arrays]
    kernel(*placed)  # device arrays: the kernel writes them in place
    return placed[1].numpy()


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("passes", [False, True], ids=["as_built", "gpu_passes"])
@pytest.mark.parametrize(("make", "case"), CASES, ids=CASE_IDS)
def test_gpu_kernels_match_numpy(make, case, passes):
    func, arrays, want = make(case)
    got = _run_on_gpu(func, arrays, compile_cuda if passes else compiled)
    _check(got, want)


# -- helpers ---------------------------------------------------------------------------------


def _replace(func: LoweredFunc, old: Stmt, new: Stmt) -> LoweredFunc:
    from schedlang.loopir.core.visit import transform_stmt

    body = transform_stmt(func.body, lambda s: new if s is old else None)
    return LoweredFunc(func.name, func.params, func.sizes, body)


def _rebuffer(func: LoweredFunc, old: Buffer, new: Buffer) -> LoweredFunc:
    """`func` with every use of the buffer `old` on `new`."""
    from schedlang.loopir.core.visit import transform_stmt

    def expr_fn(e):
        return Load(new, e.indices, e.dtype) if isinstance(e, Load) and e.buffer is old else None

    def stmt_fn(s):
        if isinstance(s, Allocate) and s.buffer is old:
            return Allocate(new, s.body)
        if isinstance(s, AsyncCopy) and s.dst is old:
            return AsyncCopy(new, s.dst_index, s.src, s.src_index, s.lanes)
        return None

    body = transform_stmt(func.body, stmt_fn, expr_fn)
    return LoweredFunc(func.name, func.params, func.sizes, body)
