"""8-bit float GEMMs on warpgroup tensor cores (`examples/gpu_gemm_fp8.py`, ``wgmma ... k32``):
simulated on the CPU with the warpgroup's accumulator layout, assembled by ptxas for sm_90a,
run on a Hopper GPU where there is one, and every way such a schedule is refused.

Inputs are random (never zeros), of magnitudes 2^-3 to 2^3 with both signs, outputs poisoned
with NaN; results are compared with the numpy reference of the unscheduled algorithm. The
simulator sums exactly converted values in float32; the GPU sums each instruction's products
with fewer mantissa bits (`_close_on_gpu`).
"""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlang as sl
from examples import gpu_gemm_fp8 as example
from schedlang.ir import dtype as dt
from schedlang.loopir.core.nodes import If, Store
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.core.visit import walk_stmt
from schedlang.runtime import tensor_maps
from schedlang.runtime.cuda import driver
from schedlang.schedule.errors import TensorizeError

from .ptxas import assemble
from .test_tensor_cores import _close

E4M3, E5M2 = "float8_e4m3fn", "float8_e5m2"
CASES = [
    # (m, n, k), A's dtype, B's dtype, output, schedule options
    ((70, 72, 224), E4M3, E4M3, "float32", dict(block_cols=64, stages=2)),
    ((70, 40, 160), E5M2, E5M2, "float32", dict(block_cols=40, stages=2)),
    ((130, 72, 160), E4M3, E5M2, "bfloat16", dict(block_cols=64, stages=3)),
    ((64, 64, 256), E5M2, E4M3, "float16", dict(block_rows=64, block_cols=64, stages=1)),
    # the copy engine: tiles of bytes, and the edges cut tiles along the rows and the columns
    ((70, 72, 160), E4M3, E4M3, "float32", dict(block_cols=64, stages=2, tma=True)),
    ((256, 256, 256), E4M3, E4M3, "float32", example.FAST),
    ((200, 264, 288), E5M2, E4M3, "bfloat16", example.FAST),
    # k by 256: rows of two 128-byte panels, read K-major across them
    ((130, 136, 544), E4M3, E4M3, "float32", dict(block_cols=64, stages=2, step=256)),
    ((130, 136, 544), E5M2, E4M3, "float32", dict(block_cols=128, stages=2, step=256, tma=True)),
    # 4 persistent blocks take the 6 tiles in turn, one pipeline across their tiles
    ((256, 384, 256), E4M3, E5M2, "bfloat16", dict(example.FAST, persistent=4)),
]


def _inputs(m, n, k, a_dtype, b_dtype, out, seed=3):
    rng = np.random.default_rng(seed)

    def draw(rows, dtype):
        magnitude = np.exp2(rng.uniform(-3.0, 3.0, (rows, k)))
        sign = np.where(rng.random((rows, k)) < 0.5, -1.0, 1.0)
        return (magnitude * sign).astype(dt.to_numpy(dtype))

    return draw(m, a_dtype), draw(n, b_dtype), np.full((m, n), np.nan, dt.to_numpy(out))


def _built(shape, a_dtype, b_dtype, out, options):
    a, b, c = example.gemm(*shape, a_dtype, out, b_dtype)
    kernel = sl.build(example.schedule(a, b, c, **options), [a, b, c], target="cuda")
    return kernel, (a, b, c)


@pytest.mark.parametrize(("shape", "a_dtype", "b_dtype", "out", "options"), CASES)
def test_simulated_with_the_warpgroup_layout(shape, a_dtype, b_dtype, out, options):
    kernel, (a, b, c) = _built(shape, a_dtype, b_dtype, out, options)
    x, y, z = _inputs(*shape, a_dtype, b_dtype, out)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), out)


def test_a_symbolic_number_of_rows():
    a, b, c = example.gemm(sl.var("m"), 72, 160, E5M2, "float32", E4M3)
    kernel = sl.build(example.schedule(a, b, c, block_cols=64, stages=2), [a, b, c], "cuda")
    for rows in (70, 192):
        x, y, z = _inputs(rows, 72, 160, E5M2, E4M3, "float32", seed=rows)
        kernel.simulate(x, y, z)
        _close(z, sl.reference(c, {a: x, b: y}), "float32")


@pytest.mark.parametrize(("a_dtype", "b_dtype"), [(E4M3, E4M3), (E5M2, E5M2), (E4M3, E5M2)])
def test_the_ptx_assembles_for_sm_90a(a_dtype, b_dtype):
    kernel, _ = _built((256, 512, 512), a_dtype, b_dtype, "bfloat16", example.FAST)
    ptx = kernel.ptx
    kinds = {E4M3: "e4m3", E5M2: "e5m2"}
    assert ".target sm_90a" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n256k32.f32.{kinds[a_dtype]}.{kinds[b_dtype]}" in ptx
    assert "p, 1, 1;" in ptx  # both K-major: the 8-bit forms take no imm-trans operands
    report = assemble(ptx)
    assert report.stack_bytes == 0 and report.spill_bytes == 0, report.log
    assert "serialized" not in report.log  # ptxas kept the products asynchronous


def test_the_copies_move_16_elements_and_tma_boxes_of_128_bytes():
    kernel, _ = _built((256, 256, 256), E4M3, E4M3, "float32", dict(block_cols=64, stages=2))
    text = str(kernel.lowered)
    assert "A.shared: float8_e4m3fn[2, 128, 128] in shared, swizzled 128" in text
    assert "16 * (ax0.ax1.fused.outer.inner % 8):+16] = async_copy(" in text
    kernel, _ = _built((256, 256, 256), E4M3, E4M3, "float32", example.FAST)
    maps = kernel._compiled.plan.tensor_maps
    assert [(m.param, m.box, m.swizzle) for m in maps[:2]] == [
        (0, (128, 128), 128),
        (1, (128, 256), 128),
    ]


def test_the_copy_engine_reads_8_bit_floats_as_bytes(monkeypatch):
    """cuTensorMapEncodeTiled has no 8-bit float type: the maps say UINT8, which moves the
    same bytes."""
    options = dict(block_cols=256, stages=3, tma=True)
    kernel, _ = _built((256, 256, 256), E5M2, E4M3, "float32", options)
    kinds = []

    def encode(kind, *args):
        kinds.append(kind)
        return ("ok", SimpleNamespace(getPtr=lambda: bytes(tensor_maps.MAP_BYTES)))

    fake = SimpleNamespace(
        CUresult=SimpleNamespace(CUDA_SUCCESS="ok"),
        CUtensorMapDataType=SimpleNamespace(CU_TENSOR_MAP_DATA_TYPE_UINT8="UINT8"),
        CUtensorMapSwizzle=SimpleNamespace(CU_TENSOR_MAP_SWIZZLE_128B="128B"),
        CUtensorMapInterleave=SimpleNamespace(CU_TENSOR_MAP_INTERLEAVE_NONE=0),
        CUtensorMapL2promotion=SimpleNamespace(CU_TENSOR_MAP_L2_PROMOTION_L2_256B=0),
        CUtensorMapFloatOOBfill=SimpleNamespace(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE=0),
        cuTensorMapEncodeTiled=encode,
        cuuint64_t=int,
        cuuint32_t=int,
    )
    monkeypatch.setattr(driver, "driver", lambda: fake)
    plan = kernel._compiled.plan
    pointers = [1 << 20 for _ in plan.buffers]
    tensor_maps.encode(plan, pointers, [])
    assert kinds == ["UINT8", "UINT8"]


def _mini(dtype=E4M3, b_dtype=None, intrin_k=32, k_split=32, a_k_major=True, b_k_major=True):
    """A 64 x 64 x 128 GEMM, one warpgroup, with one thing changed from what wgmma needs."""
    a_shape, b_shape = (
        ((64, 128) if a_k_major else (128, 64)),
        ((64, 128) if b_k_major else (128, 64)),
    )
    a = sl.placeholder(a_shape, dtype, name="A")
    b = sl.placeholder(b_shape, b_dtype or dtype, name="B")
    r = sl.reduce_axis((0, 128), name="k")

    def product(i, j):
        x = a[i, r] if a_k_major else a[r, i]
        y = b[j, r] if b_k_major else b[r, j]
        return sl.sum(x.astype("float32") * y.astype("float32"), axis=r)

    c = sl.compute((64, 64), product, name="C")
    s = sl.create_schedule(c.op)
    shared = [s.cache_read(t, "shared", [c]) for t in (a, b)]
    acc = s.cache_write(c, "wgmma.accumulator")
    s[c].tensorize(c.op.axis[0], sl.intrin.store_matrix(n=64, m=64))
    fi, fj = s[acc].op.axis
    ko, ki = s[acc].split(s[acc].op.reduce_axis[0], factor=k_split)
    s[acc].reorder(ko, fi, fj, ki)
    s[acc].tensorize(fi, sl.intrin.wgmma(n=64, k=intrin_k))
    for staged in shared:
        s[staged].swizzle(128)
        fused = s[staged].fuse(*s[staged].op.axis)
        rest, lanes = s[staged].split(fused, factor=16)
        rest, tx = s[staged].split(rest, factor=32)
        _, ty = s[staged].split(rest, factor=4)
        s[staged].bind(tx, sl.thread_axis("threadIdx.x"))
        s[staged].bind(ty, sl.thread_axis("threadIdx.y"))
        s[staged].vectorize(lanes)
    return s, [a, b, c]


def test_the_mini_schedule_is_right():
    s, (a, b, c) = _mini(E4M3, E5M2)
    kernel = sl.build(s, [a, b, c], target="cuda")
    x, y, z = _inputs(64, 64, 128, E4M3, E5M2, "float32")
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), "float32")


def test_the_intrinsic_takes_k_16_or_32():
    with pytest.raises(ValueError, match=r"k must be 16 \(float16 or bfloat16 data\) or 32"):
        sl.intrin.wgmma(n=64, k=64)
    assert repr(sl.intrin.wgmma(n=64, k=32)) == "sl.intrin.wgmma(n=64, k=32)"
    assert repr(sl.intrin.wgmma(n=64, k=16)) == "sl.intrin.wgmma(n=64)"


def test_8_bit_floats_need_the_k_32_instruction():
    s, args = _mini(intrin_k=16, k_split=16)
    with pytest.raises(
        TensorizeError,
        match=r"wgmma multiplies 32 along k .* use "
        r"sl\.intrin\.wgmma\(n=64, k=32\) and split the reduction by 32",
    ):
        sl.lower(s, args)


def test_a_k_tile_of_16_for_8_bit_floats_is_refused():
    s, args = _mini(k_split=16)
    with pytest.raises(TensorizeError, match="'k.inner' has extent 16, the intrinsic needs 32"):
        sl.lower(s, args)


def test_16_bit_operands_need_the_k_16_instruction():
    s, args = _mini(dtype="float16")
    with pytest.raises(TensorizeError, match=r"float16; wgmma\(k=32\) multiplies 8-bit floats"):
        sl.lower(s, args)


@pytest.mark.parametrize(
    ("a_k_major", "name", "stored"), [(True, "B", r"\[N, K\]"), (False, "A", r"\[M, K\]")]
)
def test_an_mn_major_8_bit_operand_is_refused(a_k_major, name, stored):
    s, args = _mini(a_k_major=a_k_major, b_k_major=not a_k_major)
    with pytest.raises(
        TensorizeError,
        match=rf"operand {name} .* only K-major.* store {name} "
        rf"as {stored}",
    ):
        sl.lower(s, args)


def test_only_hopper_runs_it():
    """sm_89 converts 8-bit floats but has no wgmma (before sm_89, the conversions are
    refused first, `test_fp8`)."""
    s, args = _mini()
    with pytest.raises(sl.LoweringError, match=r"only Hopper GPUs run \(sm_90a\).*sm_89"):
        sl.build(s, args, target="cuda -arch=sm_89")


def _close_on_gpu(got, x, y, out):
    """The GPU's sum against float64's: each instruction adds its 32 products to the
    accumulator keeping about 13 mantissa bits (docs/primitives/tensorize.md), an error of at
    most 2^-13 of the magnitudes summed per instruction, so ceil(k / 32) 2^-13 sum |a b| in
    all, plus the output's own rounding."""
    a, b = x.astype(np.float64), y.astype(np.float64)
    want = a @ b.T
    steps = math.ceil(a.shape[1] / 32)
    tol = steps * 2.0**-13 * (np.abs(a) @ np.abs(b).T)
    tol += {"float32": 0.0, "bfloat16": 2.0**-8, "float16": 2.0**-11}[out] * np.abs(want)
    got = got.astype(np.float64)
    assert not np.isnan(got).any(), "some outputs were never written"
    bad = np.abs(got - want) > tol
    assert not bad.any(), f"{bad.sum()} outputs off, e.g. {got[bad][0]} for {want[bad][0]}"


GPU_CASES = [
    ((256, 256, 256), E4M3, E4M3, "float32", example.FAST),
    ((256, 256, 256), E5M2, E4M3, "bfloat16", dict(block_cols=128, stages=3)),
    ((1000, 520, 416), E4M3, E5M2, "float32", example.FAST),
    ((1000, 520, 416), E5M2, E5M2, "float16", dict(block_cols=128, stages=3)),
]


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "a_dtype", "b_dtype", "out", "options"), GPU_CASES)
def test_on_the_gpu(shape, a_dtype, b_dtype, out, options):
    kernel, _ = _built(shape, a_dtype, b_dtype, out, options)
    x, y, z = _inputs(*shape, a_dtype, b_dtype, out, seed=5)
    kernel(x, y, z)
    _close_on_gpu(z, x, y, out)


SCALED = [
    # (m, n, k), scales, schedule options
    ((70, 72, 224), "tensor", dict(block_cols=64, stages=2)),
    ((130, 136, 160), "row", dict(block_cols=64, stages=2)),
    ((200, 264, 288), "row", dict(example.FAST, block_cols=128)),  # copy engine in and out
    ((256, 384, 256), "tensor", dict(example.FAST, block_cols=128, persistent=4)),
    # 128 x 256 tiles: the scaled values fit only in the accumulator's own registers
    ((256, 520, 256), "row", dict(example.FAST, persistent=3)),
    # edges on persistent blocks: the last tile row holds 72 rows (one warpgroup's and 8)
    ((200, 520, 288), "tensor", dict(example.FAST, persistent=3)),
]


def _scaled(shape, per, options, seed=7):
    a, b, sa, sb, c = example.scaled_gemm(*shape, per=per)
    kernel = sl.build(example.schedule(a, b, c, **options), [a, b, sa, sb, c], target="cuda")
    x, y, z = _inputs(*shape, E4M3, E4M3, "bfloat16", seed=seed)
    rng = np.random.default_rng(seed)
    u, w = (
        rng.uniform(0.25, 4.0, tuple(int(n) for n in t.shape)).astype(np.float32) for t in (sa, sb)
    )
    return kernel, (a, b, sa, sb, c), (x, y, u, w, z)


@pytest.mark.parametrize(("shape", "per", "options"), SCALED)
def test_scaled_simulated_the_scales_applied_in_registers(shape, per, options):
    """``(A @ B^T) * SA * SB``: the scales multiply the accumulator in registers (each thread
    its own elements, `loopir.gpu.fragment_lanes`), in place (`loopir.gpu.epilogue_in_place`:
    no second fragment), and store_matrix converts to bfloat16 on its way out."""
    kernel, tensors, values = _scaled(shape, per, options)
    text = str(kernel.lowered)
    assert "acc.slot[" in text and "C.wgmma.accumulator.slot[" not in text
    assert "= store_matrix(acc[0:+64, 0:+" in text
    kernel.simulate(*values)
    want = sl.reference(tensors[-1], dict(zip(tensors[:-1], values[:-1])))
    _close(values[-1], want, "bfloat16")


@pytest.mark.parametrize("per", ["tensor", "row"])
def test_scales_at_an_edge_are_applied_to_whole_tiles(per):
    """Where the sizes cut the tiles, each of a thread's 128 scaled slots stood under its own
    guards (at 4000^3: 2,400 instructions a tile). The scaling now runs on the whole tile and
    `store_matrix` stores the rows and columns that exist (`loopir.gpu.register_guards`): a
    per-tensor scale is one element, in bounds for every slot; a row's or column's scale is
    read at its index clamped into SA or SB, the index itself wherever the point exists."""
    kernel, tensors, values = _scaled((200, 520, 288), per, dict(example.FAST, persistent=3))
    (plan,) = kernel._compiled.plan.kernels
    stores = [s for s in walk_stmt(plan.body) if isinstance(s, Store) and s.buffer.name == "acc"]
    guarded = [
        s
        for g in walk_stmt(plan.body)
        if isinstance(g, If)
        for s in walk_stmt(g.then)
        if isinstance(s, Store) and s.buffer.name == "acc"
    ]
    assert stores and not guarded
    text = stmt_str(plan.body)
    assert ("SA[max(min(" in text and "SB[max(min(" in text) == (per == "row")
    kernel.simulate(*values)
    want = sl.reference(tensors[-1], dict(zip(tensors[:-1], values[:-1])))
    _close(values[-1], want, "bfloat16")


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(
    m=st.sampled_from([70, 130, 200]),
    n=st.sampled_from([136, 200, 264]),
    k=st.sampled_from([160, 288]),
    per=st.sampled_from(["tensor", "row"]),
    cols=st.sampled_from([64, 128]),
    blocks=st.sampled_from([0, 2, 3]),
)
def test_scaled_epilogues_at_drawn_edges_simulated(m, n, k, per, cols, blocks):
    """The scaled GEMM at sizes that cut the tiles, with or without persistent blocks:
    the scaling runs on whole tiles with its reads clamped (`loopir.gpu.register_guards`),
    and what reaches C is the reference, NaN nowhere."""
    options = dict(example.FAST, block_cols=cols, **({"persistent": blocks} if blocks else {}))
    kernel, tensors, values = _scaled((m, n, k), per, options, seed=m + n + k)
    kernel.simulate(*values)
    want = sl.reference(tensors[-1], dict(zip(tensors[:-1], values[:-1])))
    _close(values[-1], want, "bfloat16")


def test_a_threads_scaled_elements_run_in_slot_order():
    """A column's two rows (``v``) side by side: the column's scale, read once, serves both
    (rows outermost, a thread held its 64 column scales from its first row to its second)."""
    kernel, _, _ = _scaled((256, 512, 256), "row", dict(example.FAST, persistent=2))
    loops = re.findall(r"for C\.wgmma\.accumulator\.0\.(\w+) in range", str(kernel.lowered))
    assert loops == ["lane", "warp", "h", "v", "e"]


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "per", "options"), SCALED)
def test_scaled_on_the_gpu(shape, per, options):
    kernel, _, (x, y, u, w, z) = _scaled(shape, per, options, seed=9)
    kernel(x, y, u, w, z)
    rows, cols = (u, w) if per == "row" else (np.full(shape[0], u[0]), np.full(shape[1], w[0]))
    scaled = z.astype(np.float64) / rows[:, None] / cols[None, :]
    _close_on_gpu(scaled.astype(np.float32), x, y, "bfloat16")
