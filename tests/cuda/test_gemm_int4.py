"""The weight-only int4 GEMM (`examples/gpu_gemm_int4.py`): its definition against numpy, its
CPU schedule compiled, its CUDA-core schedule simulated on the CPU and assembled by ptxas, run
on a GPU where there is one, and the arrays a call refuses.

Activations and weights are random (never zeros), quantised per group by the example's
packer; outputs are poisoned with NaN. The reference sums in float32 in its own order, a
kernel in another, so the float16/bfloat16 results may differ by a unit in the last place.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedlang as sl
from examples import gpu_gemm_int4 as example
from schedlang.errors import LoweringError, ScheduleError
from schedlang.ir import dtype as dt
from schedlang.loopir.core.nodes import Allocate
from schedlang.loopir.core.visit import walk_stmt
from schedlang.schedule.errors import TensorizeError
from schedlang.schedule.layout import LayoutError

from .ptxas import assemble

SMALL = dict(block_rows=4, block_cols=16, threads_y=2, threads_x=8, step=8)
GPU_CASES = [
    # (m, n, k), group, dtype, schedule options
    ((1, 45, 64), 32, "bfloat16", SMALL),
    ((5, 37, 64), 32, "float16", SMALL),
    ((16, 40, 256), 128, "float16", {}),
    ((3, 131, 256), 128, "bfloat16", {}),
    ((33, 70, 128), 32, "float16", dict(block_cols=64, threads_x=16, step=16)),
]


def _inputs(m, n, k, group, dtype, seed=7):
    """``(a, packed, scales, zeros)``: activations of both signs and a weight quantised from
    a random float matrix."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.25, 2.0, (m, k)) * np.where(rng.random((m, k)) < 0.5, -1.0, 1.0)
    weight = rng.standard_normal((k, n))
    return (a.astype(dt.to_numpy(dtype)), *example.pack_int4(weight, group, dtype))


def _reference(tensors, arrays) -> np.ndarray:
    """The reference's C, checked against numpy's float32 product with the dequantised
    weight (which rounds only at the end as well)."""
    reference = sl.reference(tensors[-1], dict(zip(tensors, arrays)))
    a, packed, scales, zeros = arrays
    weight = example.dequantize(packed, scales, zeros).astype(np.float32)
    numpy = (a.astype(np.float32) @ weight).astype(reference.dtype)
    _assert_close(reference, numpy)
    return reference


def _assert_close(got: np.ndarray, want: np.ndarray) -> None:
    """Equal to a unit in the last place of the 16-bit dtype (relative to the value, or to
    the largest value for results that cancelled to near zero)."""
    eps = float(ml_dtypes.finfo(want.dtype).eps)
    got32, want32 = got.astype(np.float32), want.astype(np.float32)
    assert not np.isnan(got32).any(), "an output was never written"
    scale = np.abs(want32) + np.abs(want32).max() / 64
    np.testing.assert_array_less(np.abs(got32 - want32), 1.01 * eps * scale + 1e-30)


def _poisoned(m, n, dtype):
    return np.full((m, n), np.nan, dt.to_numpy(dtype))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_packer_quantises_each_group_to_half_a_step(dtype):
    """The packer's weight, unpacked, is the float weight to within half of its group's scale
    (and the scale's rounding); the nibbles are in the documented order."""
    weight = np.random.default_rng(2).standard_normal((96, 11)) * 3
    packed, scales, zeros = example.pack_int4(weight, 32, dtype)
    assert packed.shape == (48, 11) and packed.dtype == np.uint8
    step = np.repeat(scales.astype(np.float64), 32, axis=0)
    error = np.abs(example.dequantize(packed, scales, zeros).astype(np.float64) - weight)
    assert (error <= 0.5 * step + 2 * float(ml_dtypes.finfo(scales.dtype).eps) * 16 * step).all()
    with pytest.raises(ValueError, match="a weight of 90 rows cannot be packed in groups of 32"):
        example.pack_int4(weight[:90], 32, dtype)


@pytest.mark.parametrize(
    ("m", "n", "k", "group", "dtype"),
    [(1, 45, 64, 32, "float16"), (7, 33, 256, 128, "bfloat16"), (16, 64, 96, 32, "float16")],
)
def test_cpu_schedule_matches_the_reference(m, n, k, group, dtype):
    tensors = example.int4_gemm(m, n, k, group, dtype)
    arrays = _inputs(m, n, k, group, dtype)
    kernel = sl.build(example.cpu_schedule(*tensors), list(tensors), target="cpu")
    out = _poisoned(m, n, dtype)
    kernel(*arrays, out)
    _assert_close(out, _reference(tensors, arrays))


def test_cpu_schedule_takes_any_number_of_rows():
    """m a size variable (tokens of a batch), read off A and C at each call."""
    tensors = example.int4_gemm(sl.var("m"), 40, 64, 32, "float16")
    kernel = sl.build(example.cpu_schedule(*tensors), list(tensors), target="cpu")
    for m in (1, 9, 20):
        arrays = _inputs(m, 40, 64, 32, "float16", seed=m)
        out = _poisoned(m, 40, "float16")
        kernel(*arrays, out)
        _assert_close(out, _reference(example.int4_gemm(m, 40, 64, 32, "float16"), arrays))


def _simulated(make, shape, group, dtype, options) -> None:
    """Schedule `make` of the GEMM at `shape` simulated against the reference."""
    m, n, k = shape
    tensors = example.int4_gemm(m, n, k, group, dtype)
    kernel = sl.build(make(*tensors, **options), list(tensors), target="cuda")
    arrays = _inputs(m, n, k, group, dtype)
    out = _poisoned(m, n, dtype)
    kernel.simulate(*arrays, out)
    _assert_close(out, _reference(tensors, arrays))


def _simulated_rows(make, n, k, group, dtype, options, ms) -> None:
    """Schedule `make` of the GEMM built once for m a size variable, simulated at each of
    `ms` against the reference."""
    tensors = example.int4_gemm(sl.var("m"), n, k, group, dtype)
    kernel = sl.build(make(*tensors, **options), list(tensors), target="cuda")
    for m in ms:
        arrays = _inputs(m, n, k, group, dtype, seed=m)
        out = _poisoned(m, n, dtype)
        kernel.simulate(*arrays, out)
        _assert_close(out, _reference(example.int4_gemm(m, n, k, group, dtype), arrays))


@pytest.mark.parametrize(("shape", "group", "dtype", "options"), GPU_CASES)
def test_gpu_schedule_simulated_matches_the_reference(shape, group, dtype, options):
    _simulated(example.schedule, shape, group, dtype, options)


def test_gpu_schedule_simulated_takes_any_number_of_rows():
    """One kernel for every m (the tokens of a batch): its row blocks cut where m ends."""
    _simulated_rows(example.schedule, 48, 64, 32, "float16", SMALL, (1, 6, 9))


def test_gpu_schedule_stages_the_packed_tile_as_bytes_and_dequantises_in_registers():
    """Shared memory holds A's tile and Wq's bytes, nothing else; W lives in registers."""
    tensors = example.int4_gemm(16, 256, 256, 128, "float16")
    kernel = sl.build(example.schedule(*tensors), list(tensors), target="cuda")
    buffers = [s.buffer for s in walk_stmt(kernel.lowered.body) if isinstance(s, Allocate)]
    shared = {(b.name, b.dtype) for b in buffers if b.scope == "shared"}
    assert shared == {("A.shared", "float16"), ("Wq.shared", "uint8")}
    assert {(b.name, b.scope) for b in buffers if b.name in ("W", "acc")} == {
        ("W", "local"),
        ("acc", "local"),
    }


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gpu_schedule_at_a_decoding_shape_assembles_without_local_memory(dtype):
    """16 tokens through a 4096 x 4096 weight: ptxas takes the PTX, with no spills and no
    local memory; the tiles are copied in 16-byte vectors."""
    kernel = example.build(16, 4096, 4096, 128, dtype, target="cuda -arch=sm_90")
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    assert "st.local" not in kernel.ptx and "ld.local" not in kernel.ptx
    assert "ld.global.nc.v4.b32" in kernel.ptx and "st.shared.v4.b32" in kernel.ptx


DECODE_CASES = [
    # (m, n, k), group, dtype, decode_schedule options: slices of k within a group, across
    # groups, and not dividing k (the last slice short); columns past n
    ((1, 45, 256), 32, "bfloat16", dict(slice_k=64, cols=2, warps=2, unroll=2)),
    ((3, 300, 256), 128, "float16", dict(slice_k=96, cols=4, warps=2, unroll=2)),
    ((5, 70, 384), 128, "bfloat16", {}),
    ((16, 33, 192), 32, "float16", dict(slice_k=32, cols=2, warps=1, unroll=4)),
]


@pytest.mark.parametrize(("shape", "group", "dtype", "options"), DECODE_CASES)
def test_decode_schedule_simulated_matches_the_reference(shape, group, dtype, options):
    _simulated(example.decode_schedule, shape, group, dtype, options)


def test_decode_schedule_simulated_takes_any_number_of_rows():
    """m a size variable: 8 rows a block of threads, blocks along z for more."""
    options = dict(slice_k=64, cols=2, warps=1, unroll=2)
    _simulated_rows(example.decode_schedule, 40, 128, 32, "bfloat16", options, (1, 4, 11))


def test_decode_schedule_reads_the_packed_bytes_into_registers_and_sums_slices_apart():
    """Two kernels: the partial sums per slice of k (a temporary in global memory), then
    their sum, a column's slices shared by 8 warps (their sums combined in shared memory, the
    only shared buffer); the packed bytes loaded four at a time; no spills. The kernel is
    bound by its instructions: a weight's subtraction and product are bfloat16 instructions
    on sm_90, two columns an instruction (no rounding conversion), widening back is a shift,
    and a nibble becomes a bfloat16 by its bits (``0x4300 | q`` is 128 + q, less 128 by a
    bfloat16 subtraction), with no conversion and no float32 on the way, two columns' nibbles
    at once (`codegen.llvm.byte_fields`)."""
    kernel = example.build(1, 4096, 4096, 128, "bfloat16", target="cuda -arch=sm_90", decode=True)
    plan = kernel._compiled.plan
    assert len(plan.kernels) == 2 and [b.name for b in plan.temps] == ["acc.rf"]
    buffers = [s.buffer for s in walk_stmt(kernel.lowered.body) if isinstance(s, Allocate)]
    assert [b.name for b in buffers if b.scope == "shared"] == ["acc"]
    assert "bar.sync" not in kernel.ptx.split(".entry")[1]  # the first kernel's threads apart
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    assert "ld.global.nc.b32" in kernel.ptx and "ld.local" not in kernel.ptx
    assert "0x7FFF" not in kernel.ptx.upper() and "32767" not in kernel.ptx
    first = kernel.ptx.split(".entry")[1]
    weights = first.count("fma.rn.f32")
    pairs = first.count("mul.rn.bf16x2")
    assert 2 * pairs == weights and first.count("sub.rn.bf16x2") == 2 * pairs
    assert first.count("sub.rn.bf16 ") == first.count("mul.rn.bf16 ") == 0  # no lone lanes
    # two nibbles' bytes spread beside the bias byte 0x43 (67) by one permute, masked by
    # one ``and`` to 128 + q (0x430f430f): no lane extracted alone
    spread = re.findall(r"prmt\.b32\s+%r\d+, 67, %r\d+, 0x[57]0[46]U;", first)
    masked = re.findall(r"and\.b32\s+%r\d+, %r\d+, 1125073679;", first)
    assert len(spread) == len(masked) == pairs
    assert "add.f32" not in first and "sub.f32" not in first
    assert "cvt.rn.bf16.f32" not in first
    assert "cvt.rn.f32.u32" not in first and "cvt.f32.bf16" not in first


def test_decode_schedule_keeps_the_rows_of_a_in_registers_widened_word_by_word():
    """At m = 16 each step's pair of A's values for each row is loaded into registers (a
    buffer written by vector stores inside the counted loop over steps) and widened as the
    word holding it: the low value shifted up, the high one masked in place, one instruction
    each, never extracted alone (``cvt.u32.u16``) and never through the stack."""
    kernel = example.build(
        16,
        4096,
        4096,
        128,
        "bfloat16",
        target="cuda -arch=sm_90",
        decode=True,
        slice_k=128,
        cols=4,
        warps=4,
        unroll=2,
    )
    first = kernel.ptx.split(".entry")[1]
    assert "ld.local" not in first and "st.local" not in first
    assert "cvt.u32.u16" not in first
    high = re.findall(r"and\.b32\s+%r\d+, %r\d+, -65536;", first)
    low = re.findall(r"shl\.b32\s+%r\d+, %r\d+, 16;", first)
    assert len(high) == len(low) >= 16 * 2  # at least A's 16 rows of a step's 4 values
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log


TENSOR_CORE_CASES = [
    # (m, n, k), group, dtype: rows and columns cut by the edge, k of 6 and 4 steps
    ((130, 144, 384), 128, "bfloat16"),
    ((70, 272, 256), 32, "float16"),
]


@pytest.mark.parametrize(("shape", "group", "dtype"), TENSOR_CORE_CASES)
def test_tensor_core_schedule_simulated_matches_the_reference(shape, group, dtype):
    """W dequantised from the packed shared tile into wgmma's swizzled B tile, simulated with
    the warpgroup's layouts."""
    _simulated(example.tensor_core_schedule, shape, group, dtype, {})


def test_tensor_core_schedule_copies_the_packed_tile_and_computes_w_in_shared_memory():
    tensors = example.int4_gemm(256, 256, 512, 128, "bfloat16")
    kernel = sl.build(example.tensor_core_schedule(*tensors), list(tensors), target="cuda")
    scopes = {
        s.buffer.name: (s.buffer.scope, s.buffer.dtype)
        for s in walk_stmt(kernel.lowered.body)
        if isinstance(s, Allocate)
    }
    assert scopes["Wq.shared"] == ("shared", "uint8")  # a quarter of W's bytes a step
    assert scopes["W"] == ("shared", "bfloat16")  # computed there, read by wgmma
    first = kernel.ptx.split(".entry")[1]
    assert "wgmma.mma_async" in first and "cp.async" in first
    assert assemble(kernel.ptx).spill_bytes == 0


TENSOR_CORE_DECODE_CASES = [
    # n, k, group, dtype, options: columns cut by the edge; the last slice short (k = 384 in
    # slices of 256); slices within a group and across groups
    (208, 384, 128, "bfloat16", dict(slice_k=256, block_cols=64)),
    (80, 256, 32, "float16", dict(slice_k=128, block_cols=64, stages=3)),
]


@pytest.mark.parametrize(("n", "k", "group", "dtype", "options"), TENSOR_CORE_DECODE_CASES)
def test_tensor_core_decode_schedule_simulated_takes_any_number_of_rows(
    n, k, group, dtype, options
):
    """Slices of k by blocks of their own, each a warpgroup's 64 rows of which m are real:
    one kernel for m = 1, 5 and 16 (and 64, a whole tile), the slices added by a second."""
    make = example.tensor_core_decode_schedule
    _simulated_rows(make, n, k, group, dtype, options, (1, 5, 16, 64))


REGISTER_DECODE_CASES = [
    # n, k, group, dtype, options: columns cut by the edge (n = 80: the second block's 16),
    # the last slice short; 8 rows a block (wgmma's n = 8), 16
    (80, 384, 128, "bfloat16", dict(slice_k=256, rows=8)),
    (208, 256, 32, "float16", dict(slice_k=128, rows=16, stages=3)),
    # steps of 128 rows of k: 32 bytes a thread loaded before 8 products, a short last slice
    (144, 640, 128, "bfloat16", dict(slice_k=256, rows=8, step=128)),
    # the slices added by threads of four columns each (n = 90: a vector cut by the edge),
    # and by eight warps a block of 32 columns
    (90, 512, 128, "bfloat16", dict(slice_k=128, rows=16, sum_lanes=4)),
    (80, 384, 32, "bfloat16", dict(slice_k=128, rows=8, sum_lanes=0)),
]


@pytest.mark.parametrize(("n", "k", "group", "dtype", "options"), REGISTER_DECODE_CASES)
def test_register_decode_schedule_simulated_takes_any_number_of_rows(n, k, group, dtype, options):
    """W^T computed in registers, each thread its own elements of the A operand, the
    partial sums stored transposed: m = 1, 5, 16 and 37 (several blocks of rows)."""
    make = example.register_decode_schedule
    _simulated_rows(make, n, k, group, dtype, options, (1, 5, 16, 37))


@pytest.mark.parametrize(("n", "k", "group", "rows"), [(128, 384, 128, 8), (192, 256, 32, 16)])
def test_register_decode_schedule_reads_bytes_in_the_threads_order(n, k, group, rows):
    """Wq passed in `thread_bytes`'s order (`bytes_by_thread_order`): the same products, the
    buffer a box of the map's digits; each thread's four bytes of a step adjacent."""
    tensors = example.int4_gemm(sl.var("m"), n, k, group, "bfloat16")
    made = example.register_decode_schedule(
        *tensors, slice_k=128, rows=rows, bytes_by_thread=True
    )
    kernel = sl.build(made, list(tensors), target="cuda")
    for m in (1, 5, 16, 37):
        a, packed, scales, zeros = _inputs(m, n, k, group, "bfloat16", seed=m)
        ordered = example.bytes_by_thread_order(packed)
        assert ordered.shape == (k // 16, n // 64, 4, 8, 4, 2, 2)
        # the bytes of warp 2's lane 13 (quad row 3, lane 1 in it) at the first step: rows
        # 16 * 2 + 8 h + 3 of n, k-pairs 1 + 4 t, side by side as [h, t]
        np.testing.assert_array_equal(
            ordered[0, 0, 2, 3, 1], packed[[[1, 5], [1, 5]], [[35], [43]]]
        )
        out = _poisoned(m, n, "bfloat16")
        kernel.simulate(a, ordered, scales, zeros, out)
        want = _reference(example.int4_gemm(m, n, k, group, "bfloat16"), (a, packed, scales, zeros))
        _assert_close(out, want)


def test_a_fragment_s_rows_vectorized_run_alone_and_say_so():
    """The rows of W's fragment are spread over the threads: vectorizing them is said to run
    row by row, at the user's line, and the kernel is still right."""
    tensors = example.int4_gemm(sl.var("m"), 80, 256, 32, "bfloat16")
    made = example.register_decode_schedule(*tensors, slice_k=128, rows=8)
    fragments = [st for st in made.stages if st.scope == "wgmma.accumulator"]
    weight = next(st for st in fragments if st.op.name.startswith("W"))
    made[weight].vectorize(weight.op.axis[0])
    with pytest.warns(sl.SchedlangWarning, match="vectorize the column axis") as caught:
        kernel = sl.build(made, list(tensors), target="cuda")
    assert caught[0].filename == __file__
    arrays = _inputs(5, 80, 256, 32, "bfloat16")
    out = _poisoned(5, 80, "bfloat16")
    kernel.simulate(*arrays, out)
    _assert_close(out, _reference(example.int4_gemm(5, 80, 256, 32, "bfloat16"), arrays))


def test_the_threads_order_needs_whole_tiles_and_says_so():
    """n not a multiple of 64: the caller's reordering says why, and the schedule's layout
    is refused before anything runs (it would pad Wq's buffer)."""
    with pytest.raises(ValueError, match="columns in blocks of 64"):
        example.bytes_by_thread_order(np.zeros((64, 80), np.uint8))
    tensors = example.int4_gemm(sl.var("m"), 80, 128, 32, "bfloat16")
    with pytest.raises(LayoutError, match="would pad the buffer"):
        example.register_decode_schedule(*tensors, slice_k=128, bytes_by_thread=True)


def test_register_decode_schedule_computes_the_weight_in_registers():
    """No shared tile of W and no barrier between its dequantisation and the product: the
    only shared buffer of the first kernel is A's tile, and wgmma's A operand is registers."""
    tensors = example.int4_gemm(sl.var("m"), 1024, 2048, 128, "bfloat16")
    made = example.register_decode_schedule(*tensors)
    kernel = sl.build(made, list(tensors), target="cuda -arch=sm_90a")
    first = kernel.ptx.split(".entry")[1]
    shape = r"wgmma\.mma_async\.sync\.aligned\.m64n16k16\.f32\.bf16\.bf16"
    products = re.findall(shape + r" [^;]*;", first)
    assert products and all(re.search(r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd", p) for p in products)
    shared = {
        s.buffer.name for s in walk_stmt(kernel.lowered.body) if isinstance(s, Allocate)
        and s.buffer.scope == "shared"
    }  # fmt: skip
    assert shared == {"A.shared"}  # A's tile (the second kernel adds slices in registers)


def test_register_decode_slices_are_added_a_pair_of_columns_a_thread():
    """The second kernel: each thread loads every slice of its two columns as one vector,
    all the loads before the sums (the slice loop unrolled), and no barrier."""
    tensors = example.int4_gemm(sl.var("m"), 1024, 2048, 128, "bfloat16")
    made = example.register_decode_schedule(*tensors, slice_k=256, sum_lanes=2)
    kernel = sl.build(made, list(tensors), target="cuda -arch=sm_90a")
    second = kernel.ptx.split(".entry")[2]
    assert len(re.findall(r"ld\.global\.nc\.v2\.b32", second)) == 2048 // 256
    assert "bar.sync" not in second and "ld.shared" not in second


def test_register_decode_schedule_dequantises_a_byte_into_a_pair_of_halves():
    """W's stage vectorized over k: a thread's two adjacent k of a row (one byte's nibbles,
    one group's scale and zero) are made one bfloat16x2 register by paired instructions, a
    byte load, one logic instruction (both nibbles masked, both bias bytes set), a scale and
    a zero per pair, no half computed alone."""
    tensors = example.int4_gemm(sl.var("m"), 1024, 2048, 128, "bfloat16")
    kernel = sl.build(example.register_decode_schedule(*tensors), list(tensors), target="cuda")
    first = kernel.ptx.split(".entry")[1]
    pairs = first.count("mul.rn.bf16x2")
    assert pairs and pairs == first.count("ld.global.nc.b8")
    assert first.count("sub.rn.bf16x2") == 2 * pairs  # the nibbles' bias, then the zero
    assert first.count("lop3.b32") == pairs
    assert "mul.rn.bf16 " not in first and "sub.rn.bf16 " not in first
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log


def test_tensor_core_decode_schedule_at_rows_fewer_than_a_tile_says_to_make_them_a_variable():
    """m = 16 as an int: the 64-row tile loop is 16 long, which no instruction takes; the
    refusal names the way out (a size variable: the tile is then cut where m ends)."""
    tensors = example.int4_gemm(16, 128, 256, 128, "bfloat16")
    with pytest.raises(TensorizeError, match=r"has extent 16, the intrinsic needs 64.*sl\.var"):
        sl.build(example.tensor_core_decode_schedule(*tensors), list(tensors), target="cuda")


# the refusals the drawn decoding schedules may meet, each naming the way out
DECODE_REFUSALS = "|".join(
    (
        # 16 columns a block; A's tile cut to a slice shorter than the step (96 of 128)
        r"rows of \d+ bytes; wgmma reads rows of 128 bytes",
        r"holds tiles of 64 x 8k",  # W's fragment over fewer than 64 columns of n
        r"sl\.var",  # a tile longer than its constant dimension
        r"runs part of a tile",  # a slice ending inside a 16-row tile
        r"would pad the buffer",  # Wq in the threads' order over n not a multiple of 64
    )
)


@settings(max_examples=10, deadline=None, derandomize=True, database=None)
@given(
    n=st.sampled_from([16, 80, 128, 144, 192, 208]),
    group=st.sampled_from([8, 32, 128]),
    groups=st.integers(1, 4),
    slice_k=st.sampled_from([64, 96, 128, 200, 256, 320]),
    registers=st.booleans(),
    columns=st.sampled_from([16, 64, 128]),
    rows=st.sampled_from([8, 16]),
    stages=st.sampled_from([1, 2, 3]),
    step=st.sampled_from([64, 128]),
    by_thread=st.booleans(),
    m=st.integers(1, 70),
)
def test_tensor_core_decode_schedules_at_drawn_slices_are_right_or_refused(
    n, group, groups, slice_k, registers, columns, rows, stages, step, by_thread, m
):
    """Either tensor-core decoding schedule (W in shared memory, `columns` a block, or in
    registers, `rows` a block, `step` rows of k loaded at once, Wq in the threads' order or
    not), slices that divide k or not, end inside a step or inside a 16-row tile (200),
    blocks of columns past n, any number of rows: the kernel matches the reference, or a
    schedule or lowering error refuses it before anything runs (an internal error fails the
    test)."""
    k = group * groups * (128 // group if group < 128 else 1)
    tensors = example.int4_gemm(sl.var("m"), n, k, group, "bfloat16")
    by_thread = by_thread and registers
    try:
        if registers:
            made = example.register_decode_schedule(
                *tensors, slice_k=slice_k, rows=rows, stages=stages, step=step,
                bytes_by_thread=by_thread,
            )  # fmt: skip
        else:
            made = example.tensor_core_decode_schedule(
                *tensors, slice_k=slice_k, block_cols=columns, stages=stages
            )
        kernel = sl.build(made, list(tensors), target="cuda")
    except (ScheduleError, LoweringError) as refused:
        assert re.search(DECODE_REFUSALS, str(refused)), refused  # one that says what to change
        return
    arrays = _inputs(m, n, k, group, "bfloat16", seed=m)
    a, packed, scales, zeros = arrays
    ordered = example.bytes_by_thread_order(packed) if by_thread else packed
    out = _poisoned(m, n, "bfloat16")
    kernel.simulate(a, ordered, scales, zeros, out)
    _assert_close(out, _reference(example.int4_gemm(m, n, k, group, "bfloat16"), arrays))


def test_a_tensorized_slice_of_k_cut_inside_a_tile_is_refused():
    """k = 392 in slices of 256: the last slice's 136 rows end inside a 16-row tile, which
    the instruction would sum whole (the slices' condition, a where= of rfactor, restricts
    the tiles that run; one it cuts is refused, never summed past the end)."""
    tensors = example.int4_gemm(sl.var("m"), 192, 392, 8, "bfloat16")
    made = example.tensor_core_decode_schedule(*tensors, slice_k=256, block_cols=64)
    with pytest.raises(TensorizeError, match="runs part of a tile"):
        sl.build(made, list(tensors), target="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 16, 37])
@pytest.mark.parametrize("make", ["tensor_core_decode_schedule", "register_decode_schedule"])
def test_tensor_core_decode_schedules_on_the_gpu(make, m):
    n, k, group, dtype = 1040, 2048, 128, "bfloat16"
    tensors = example.int4_gemm(sl.var("m"), n, k, group, dtype)
    made = getattr(example, make)(*tensors, slice_k=512)
    kernel = sl.build(made, list(tensors), target="cuda")
    arrays = _inputs(m, n, k, group, dtype)
    out = _poisoned(m, n, dtype)
    kernel(*arrays, out)
    _assert_close(out, _reference(example.int4_gemm(m, n, k, group, dtype), arrays))


@pytest.mark.gpu
@pytest.mark.parametrize("sum_lanes", [0, 2])
@pytest.mark.parametrize("m", [1, 16, 37])
def test_register_decode_in_the_threads_order_on_the_gpu(m, sum_lanes):
    """Wq in `thread_bytes`'s order, steps of 128 rows of k, the slices added by eight warps
    a column or by a thread a pair of columns: the benchmark's kernels."""
    n, k, group, dtype = 1088, 2560, 128, "bfloat16"
    tensors = example.int4_gemm(sl.var("m"), n, k, group, dtype)
    made = example.register_decode_schedule(
        *tensors, slice_k=512, rows=16, step=128, bytes_by_thread=True, sum_lanes=sum_lanes
    )
    kernel = sl.build(made, list(tensors), target="cuda")
    arrays = _inputs(m, n, k, group, dtype)
    a, packed, scales, zeros = arrays
    out = _poisoned(m, n, dtype)
    kernel(a, example.bytes_by_thread_order(packed), scales, zeros, out)
    _assert_close(out, _reference(example.int4_gemm(m, n, k, group, dtype), arrays))


@pytest.mark.gpu
@pytest.mark.parametrize("make", [example.schedule, example.decode_schedule])
@pytest.mark.parametrize(
    ("shape", "group", "dtype"),
    [((1, 4096, 4096), 128, "float16"), ((13, 1000, 512), 32, "bfloat16")],
)
def test_schedules_on_the_gpu(make, shape, group, dtype):
    m, n, k = shape
    tensors = example.int4_gemm(m, n, k, group, dtype)
    kernel = sl.build(make(*tensors), list(tensors), target="cuda")
    arrays = _inputs(m, n, k, group, dtype)
    out = _poisoned(m, n, dtype)
    kernel(*arrays, out)
    _assert_close(out, _reference(tensors, arrays))


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("shape", "group", "dtype"), [((300, 1040, 1024), 128, "bfloat16"), ((64, 4096, 4096), 32,
                                                                          "float16")]
)  # fmt: skip
def test_tensor_core_schedule_on_the_gpu(shape, group, dtype):
    m, n, k = shape
    tensors = example.int4_gemm(m, n, k, group, dtype)
    kernel = sl.build(example.tensor_core_schedule(*tensors), list(tensors), target="cuda")
    arrays = _inputs(m, n, k, group, dtype)
    out = _poisoned(m, n, dtype)
    kernel(*arrays, out)
    _assert_close(out, _reference(tensors, arrays))


@pytest.fixture(scope="module")
def cpu_kernel():
    tensors = example.int4_gemm(3, 64, 128, 32, "float16")
    return sl.build(example.cpu_schedule(*tensors), list(tensors), target="cpu")


def test_a_call_refuses_packed_weights_of_another_layout(cpu_kernel):
    """The weight unpacked (k rows, not k // 2), packed in signed bytes, or scaled for
    another group: refused before anything runs, the output left as it was."""
    a, packed, scales, zeros = _inputs(3, 64, 128, 32, "float16")
    out = _poisoned(3, 64, "float16")
    unpacked = np.repeat(packed, 2, axis=0)
    with pytest.raises(ValueError, match=r"dimension 0 of 'Wq' must be 64, but its array has 128"):
        cpu_kernel(a, unpacked, scales, zeros, out)
    with pytest.raises(TypeError, match=r"argument 'Wq' must have dtype uint8, got int8"):
        cpu_kernel(a, packed.view(np.int8), scales, zeros, out)
    with pytest.raises(ValueError, match=r"dimension 0 of 'W_scale' must be 4, but its array"):
        cpu_kernel(a, packed, scales[:1], zeros, out)
    with pytest.raises(ValueError, match=r"dimension 1 of 'A' must be 128, but its array has 127"):
        cpu_kernel(a[:, :127], packed, scales, zeros, out)
    assert np.isnan(out.astype(np.float32)).all()


def test_the_definition_refuses_an_odd_k_and_a_group_that_does_not_divide_it():
    with pytest.raises(sl.AlgorithmError, match=r"K = 63 is odd"):
        example.int4_gemm(4, 64, 63, 7)
    with pytest.raises(sl.AlgorithmError, match=r"group 128 does not divide K = 192"):
        example.int4_gemm(4, 64, 192, 128)
