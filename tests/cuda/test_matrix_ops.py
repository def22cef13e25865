"""Tensor-core statements (`MatrixOp`) on the cuda target: hand-built warp GEMMs as PTX that
ptxas accepts (``ldmatrix`` where the layout allows it, ``mma.sync.m16n8k16``, fragments in
registers), the lane addressing of ``ldmatrix`` against a model of the instruction, the errors
for kernels that cannot run as warps, and (on a GPU) the products against numpy."""

from __future__ import annotations

import re

import numpy as np
import pytest

from schedlang.codegen.fingerprint import fingerprint
from schedlang.codegen.llvm.text import module_text
from schedlang.codegen.nvptx import compile as nvptx_compile
from schedlang.codegen.nvptx.compile import compile_cuda, machine
from schedlang.codegen.nvptx.matrix_memory import ldmatrix_plan
from schedlang.codegen.nvptx.module import build_module
from schedlang.codegen.nvptx.plan import plan_kernels
from schedlang.errors import LoweringError
from schedlang.ir import dtype as dt
from schedlang.ir.expr import Expr, Var, const
from schedlang.loopir.core.nodes import (
    Allocate,
    Barrier,
    Buffer,
    For,
    If,
    Load,
    LoweredFunc,
    MatrixOp,
    Stmt,
    Store,
    Tile,
    seq,
)
from schedlang.loopir.memory import fragments

from .ptxas import assemble

MMA = "mma.sync.aligned.m16n8k16.row.col"


def loop_var(name: str) -> Var:
    return Var(name, "int32", "loop")


def c(value: int) -> Expr:
    return const(value, "int32")


def tile(buffer: Buffer, base, dims=(0, 1), shape=(16, 16)) -> Tile:
    return Tile(buffer, tuple(c(i) if isinstance(i, int) else i for i in base), dims, shape)


def shared(buffer: Buffer, pad: int) -> Buffer:
    """A shared copy of the 2-D `buffer`, each row padded by `pad` elements."""
    rows, cols = (int(n.value) for n in buffer.shape)
    strides = (c(cols + pad), c(1)) if pad else None
    return Buffer(f"{buffer.name}.shared", buffer.shape, buffer.dtype, "shared", strides)


def copy(src: Buffer, dst: Buffer, ty: Var, tx: Var, warps: int) -> Stmt:
    """`dst` := `src`, element ``e * threads + thread`` by each thread of the block."""
    rows, cols = (int(n.value) for n in src.shape)
    threads = 32 * warps
    e = loop_var(f"{dst.name}.e")
    flat = (e * warps + ty) * 32 + tx
    at = (flat // cols, flat % cols)
    body = If(flat < rows * cols, Store(dst, at, Load(src, at, src.dtype)))
    return For(e, c(0), c(-(-rows * cols // threads)), "serial", body)


def warp_gemm(
    dtype: str = "float16",
    acc: str = "float32",
    out: str | None = None,
    n: int = 16,
    k_tiles: int = 2,
    warps: int = 1,
    staged: bool = True,
    b_layout: str = "kn",
    pad: int = 0,
    unrolled: bool = True,
) -> LoweredFunc:
    """C = A @ B in one block: warp ``ty`` computes rows ``16 ty ..`` of C (n columns) over
    K = 16 `k_tiles`, its fragments loaded from shared copies of A and B (filled by all the
    block's threads, then a barrier) when `staged`, else straight from global memory. B is
    stored [K][N] (`b_layout` "kn") or [N][K] ("nk"); shared rows are padded by `pad`
    elements. With `unrolled` the k steps are copies (fragment tiles at constant slots),
    otherwise a serial loop (fragment tiles chosen at run time). Unstaged, the threads only
    mark a fourth argument, D, so that a loop over threadIdx.x makes the block 32 wide."""
    m, kk = 16 * warps, 16 * k_tiles
    a = Buffer("A", (c(m), c(kk)), dtype)
    b = Buffer("B", (c(kk), c(n)) if b_layout == "kn" else (c(n), c(kk)), dtype)
    out_buffer = Buffer("C", (c(m), c(n)), out or acc)
    a_frag = Buffer("A.frag", (c(16), c(kk)), dtype, "wmma.matrix_a")
    b_frag = Buffer("B.frag", (c(kk), c(n)), dtype, "wmma.matrix_b")
    c_frag = Buffer("C.frag", (c(16), c(n)), acc, "wmma.accumulator")
    ty, tx = loop_var("ty"), loop_var("tx")
    a_src, b_src = (shared(a, pad), shared(b, pad)) if staged else (a, b)
    c_tile = tile(c_frag, (0, 0), shape=(16, n))

    def k_step(kt: Expr) -> Stmt:
        b_tile = tile(b_frag, (kt * 16, 0), shape=(16, n))
        if b_layout == "kn":
            b_mem = tile(b_src, (kt * 16, 0), shape=(16, n))
        else:
            b_mem = tile(b_src, (0, kt * 16), (1, 0), (16, n))
        a_tile = tile(a_frag, (0, kt * 16))
        return seq(
            MatrixOp("load", a_tile, (tile(a_src, (ty * 16, kt * 16)),)),
            MatrixOp("load", b_tile, (b_mem,)),
            MatrixOp("mma", c_tile, (a_tile, b_tile)),
        )

    if unrolled:
        steps = seq(*(k_step(c(kt)) for kt in range(k_tiles)))
    else:
        kt = loop_var("kt")
        steps = For(kt, c(0), c(k_tiles), "serial", k_step(kt))
    work = seq(
        MatrixOp("fill", c_tile, value=const(0.0, acc)),
        steps,
        MatrixOp("store", tile(out_buffer, (ty * 16, 0), shape=(16, n)), (c_tile,)),
    )
    work = Allocate(a_frag, Allocate(b_frag, Allocate(c_frag, work)))
    if staged:
        fill = seq(copy(a, a_src, ty, tx, warps), copy(b, b_src, ty, tx, warps))
        body = seq(
            For(ty, c(0), c(warps), "bound", lanes(tx, fill), "threadIdx.y"),
            Barrier(),
            For(ty, c(0), c(warps), "bound", work, "threadIdx.y"),
        )
        body = Allocate(a_src, Allocate(b_src, body))
        return LoweredFunc("warp_gemm", (a, b, out_buffer), (), body)
    marks = Buffer("D", (c(32 * warps),), "float32")
    mark = Store(marks, (ty * 32 + tx,), const(1.0, "float32"))
    body = For(ty, c(0), c(warps), "bound", seq(lanes(tx, mark), work), "threadIdx.y")
    return LoweredFunc("warp_gemm", (a, b, out_buffer, marks), (), body)


def lanes(tx: Var, body: Stmt) -> For:
    return For(tx, c(0), c(32), "bound", body, "threadIdx.x")


def ptx_of(func: LoweredFunc) -> str:
    return compile_cuda(func, "sm_90").ptx


# -- PTX -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [8, 16])
@pytest.mark.parametrize("b_layout", ["kn", "nk"])
def test_staged_operands_load_with_ldmatrix_into_registers(dtype, n, b_layout):
    ptx = ptx_of(warp_gemm(dtype, n=n, b_layout=b_layout))
    report = assemble(ptx)
    assert report.stack_bytes == 0, report.log
    mmas = 2 * (n // 8)  # two k steps
    assert len(re.findall(re.escape(MMA), ptx)) == mmas
    kind = "bf16.bf16" if dtype == "bfloat16" else "f16.f16"
    assert f"{MMA}.f32.{kind}.f32" in ptx
    b_trans = ".trans" if b_layout == "kn" else ""
    b_count = "x4" if n == 16 else "x2"
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", ptx)) >= 2  # A
    assert re.search(rf"ldmatrix\.sync\.aligned\.m8n8\.{b_count}{re.escape(b_trans)}\.shared", ptx)


def test_a_float16_accumulator_and_a_float16_output():
    ptx = ptx_of(warp_gemm("float16", acc="float16", n=16))
    assert assemble(ptx).stack_bytes == 0
    assert f"{MMA}.f16.f16.f16.f16" in ptx


def test_a_float32_accumulator_stored_as_float16_rounds_to_nearest():
    ptx = ptx_of(warp_gemm("float16", out="float16"))
    assemble(ptx)
    assert re.search(r"cvt\.rn\.f16(x2)?\.f32", ptx)


def test_fragments_straight_from_global_memory_need_no_ldmatrix():
    ptx = ptx_of(warp_gemm(staged=False, warps=2))
    report = assemble(ptx)
    assert report.stack_bytes == 0
    assert "ldmatrix" not in ptx and MMA in ptx
    assert re.search(r"ld\.global(\.nc)?\.b32", ptx)  # the pairs of neighbouring columns of A


def test_rows_padded_off_16_bytes_fall_back_to_per_lane_loads():
    aligned = ptx_of(warp_gemm(pad=8))
    assert "ldmatrix" in aligned
    ptx = ptx_of(warp_gemm(pad=4))
    assemble(ptx)
    assert "ldmatrix" not in ptx and MMA in ptx


def test_a_k_loop_indexes_fragments_at_run_time_and_still_assembles():
    """The loop IR unrolls the loops that choose fragment tiles; left a loop (no GPU passes),
    the fragments are stack arrays indexed at run time."""
    func = warp_gemm(unrolled=False, k_tiles=3)
    plan = plan_kernels(func)
    tm = machine("sm_90")
    text = module_text(build_module(plan, "sm_90", str(tm.target_data)))
    assert "alloca" in text
    ptx = nvptx_compile._ptx(text, [k.name for k in plan.kernels], tm)
    assemble(ptx)
    assert MMA in ptx and "ldmatrix" in ptx


def test_two_warps_store_their_own_rows():
    ptx = ptx_of(warp_gemm(warps=2))
    assert assemble(ptx).stack_bytes == 0
    assert re.search(r"st\.global\.v2\.[fb]32", ptx)  # neighbouring columns in one store


def test_the_fingerprint_sees_what_printing_leaves_out_of_matrix_ops():
    out = Buffer("C", (c(16), c(16)), "float16")
    frag = Buffer("C.frag", (c(16), c(16)), "float16", "wmma.accumulator")

    def filled(dtype: str) -> LoweredFunc:
        fill = MatrixOp("fill", tile(frag, (0, 0)), value=const(1.0, dtype))
        store = MatrixOp("store", tile(out, (0, 0)), (tile(frag, (0, 0)),))
        return LoweredFunc("f", (out,), (), Allocate(frag, seq(fill, store)))

    one16, one32 = filled("float16"), filled("float32")
    assert str(one16) == str(one32)
    assert fingerprint(one16, "k") != fingerprint(one32, "k")
    assert fingerprint(one16, "k") == fingerprint(filled("float16"), "k")


# -- ldmatrix's lanes, against a model of the instruction ------------------------------------


def ldmatrix_model(scope: str, shape: tuple[int, int], contiguous_axis: int) -> list[list]:
    """What each lane holds after the planned ldmatrix, per the PTX ISA: lane ``8i + r`` gives
    the address of row r of matrix i (8 elements along the contiguous axis); register i of lane
    ``4g + t`` holds elements ``2t, 2t + 1`` of row g (of column g with ``.trans``)."""
    plan = ldmatrix_plan(scope, shape, contiguous_axis)
    step = [0, 0]
    step[plan.step_axis] = 1
    along = [0, 0]
    along[contiguous_axis] = 1
    rows = {}
    for i in range(plan.count):
        for r in range(8):
            b3, b4 = i & 1, i >> 1 & 1
            corner = [f[0] + f[1] * b3 + f[2] * b4 for f in plan.origin]
            start = (corner[0] + r * step[0], corner[1] + r * step[1])
            rows[i, r] = [(start[0] + j * along[0], start[1] + j * along[1]) for j in range(8)]
    held = []
    for lane in range(32):
        g, t = lane // 4, lane % 4
        slots = []
        for i in range(plan.count):
            for j in (2 * t, 2 * t + 1):
                slots.append(rows[i, j][g] if plan.trans else rows[i, g][j])
        held.append(slots)
    return held


@pytest.mark.parametrize(
    ("scope", "shape"),
    [
        ("wmma.matrix_a", (16, 16)),
        ("wmma.matrix_b", (16, 8)),
        ("wmma.matrix_b", (16, 16)),
        ("wmma.matrix_a", (8, 16)),  # TE's m8n32k16: one .x2
    ],
)
@pytest.mark.parametrize("contiguous_axis", [0, 1])
def test_ldmatrix_gives_each_lane_its_fragment_slots(scope, shape, contiguous_axis):
    want = [list(slots) for slots in fragments.layout(scope, shape)]
    assert ldmatrix_model(scope, shape, contiguous_axis) == want
    plan = ldmatrix_plan(scope, shape, contiguous_axis)
    pairs_along_rows = scope == "wmma.matrix_b"
    assert plan.trans == (pairs_along_rows == (contiguous_axis == 1))


# -- errors ----------------------------------------------------------------------------------


def test_a_block_not_32_wide_is_refused():
    func = warp_gemm(staged=False)
    body = func.body
    narrow = _replace_lanes(body, 16)
    with pytest.raises(LoweringError, match="32"):
        compile_cuda(LoweredFunc(func.name, func.params, (), narrow))


def test_an_op_inside_a_lane_loop_is_refused():
    func = warp_gemm(staged=False)
    tx = loop_var("tx2")
    inside = For(tx, c(0), c(32), "bound", func.body, "threadIdx.x")
    with pytest.raises(LoweringError, match="threadIdx.x"):
        compile_cuda(LoweredFunc(func.name, func.params, (), inside))


def test_the_cpu_target_refuses_tensor_core_operations():
    from schedlang.codegen.cpu.jit import host
    from schedlang.codegen.cpu.module import build_module

    target = host().target
    out = Buffer("C", (c(16), c(16)), "float32")
    c_frag = Buffer("C.frag", (c(16), c(16)), "float32", "wmma.accumulator")
    fill = MatrixOp("fill", tile(c_frag, (0, 0)), value=const(0.0, "float32"))
    store = MatrixOp("store", tile(out, (0, 0)), (tile(c_frag, (0, 0)),))
    func = LoweredFunc("fill", (out,), (), Allocate(c_frag, seq(fill, store)))
    with pytest.raises(LoweringError, match="need the cuda target; build for target='cuda'"):
        build_module(func, target, target.triple)
    with pytest.raises(LoweringError, match="need the cuda target; build for target='cuda'"):
        target.matrix_op(None, fill)


def _replace_lanes(s: Stmt, extent: int) -> Stmt:
    from schedlang.loopir.core.visit import stmt_children, with_children

    if isinstance(s, For) and s.thread == "threadIdx.x":
        return For(s.var, s.min, c(extent), s.kind, s.body, s.thread)
    kids = stmt_children(s)
    return with_children(s, tuple(_replace_lanes(k, extent) for k in kids)) if kids else s


# -- on a GPU --------------------------------------------------------------------------------

GPU_CASES = [
    {"dtype": "float16"},
    {"dtype": "bfloat16"},
    {"dtype": "float16", "b_layout": "nk"},
    {"dtype": "bfloat16", "b_layout": "nk", "n": 8},
    {"dtype": "float16", "n": 8},
    {"dtype": "float16", "staged": False},
    {"dtype": "bfloat16", "staged": False, "n": 8, "b_layout": "nk"},
    {"dtype": "float16", "k_tiles": 4, "warps": 2},
    {"dtype": "bfloat16", "k_tiles": 3, "warps": 2, "out": "bfloat16"},
    {"dtype": "float16", "out": "float16"},
    {"dtype": "float16", "acc": "float16", "k_tiles": 1},
    {"dtype": "float16", "pad": 8},
    {"dtype": "float16", "pad": 4},
    {"dtype": "float16", "unrolled": False, "k_tiles": 3},
]


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("case", GPU_CASES, ids=lambda case: str(case))
def test_gpu_warp_gemm_matches_numpy(case):
    import schedlang as sl
    from schedlang.runtime.cuda.kernel import CudaKernel

    func = warp_gemm(**case)
    kernel = CudaKernel(func, compile_cuda(func), "cuda")
    a_buf, b_buf, c_buf = func.params[:3]
    marks = [np.zeros(32 * case.get("warps", 1), np.float32)] if len(func.params) > 3 else []
    rng = np.random.default_rng(3)
    arrays = [
        rng.uniform(-1, 1, [int(n.value) for n in buf.shape]).astype(dt.to_numpy(buf.dtype))
        for buf in (a_buf, b_buf)
    ]
    out_shape = [int(n.value) for n in c_buf.shape]
    result = sl.array(np.full(out_shape, np.nan, dt.to_numpy(c_buf.dtype)))
    kernel(*arrays, result, *marks)  # a device array: the kernel writes it in place
    a, b = (x.astype(np.float32) for x in arrays)
    want = a @ (b if case.get("b_layout", "kn") == "kn" else b.T)
    got = result.numpy().astype(np.float32)
    tolerance = 2e-2 if "float16" in (case.get("out"), case.get("acc")) else 1e-3
    if "bfloat16" == case.get("out"):
        tolerance = 2e-2
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
