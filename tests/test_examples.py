"""The example schedules under examples/: right on odd sizes, and the GPU ones lean in PTX."""

from __future__ import annotations

import re
import time
import warnings

import numpy as np
import pytest

import schedlang as sl
from examples import (
    gpu_attention,
    gpu_conv2d,
    gpu_elementwise,
    gpu_gemm,
    gpu_rows,
    gpu_transpose,
    gpu_winograd,
)
from schedlang.loopir.core.nodes import Allocate, For, Load, Turn
from schedlang.loopir.core.printer import stmt_str
from schedlang.loopir.core.visit import stmt_exprs, walk_expr, walk_stmt
from schedlang.loopir.interpret import run
from tests.cuda.ptxas import assemble, releases_in_flight


@pytest.mark.parametrize(("n", "group"), [(45, 0), (64, 2), (96, 4)])
def test_gpu_gemm_at_small_tiles_matches_the_reference(n, group):
    """The GEMM schedule with its tiles shrunk (so the interpreter is quick), at sizes that
    divide none of them; also with its blocks launched in groups of 2 of its 4 columns, and
    with groups of 4 asked of 6 columns (which 4 does not divide: groups of 3)."""
    at, b, c = gpu_gemm.gemm(37, n, 19)
    s = gpu_gemm.schedule(at, b, c, block=16, threads=4, vthreads=2, step=4, group=group)
    kernel = sl.build(s, [at, b, c], target="cuda")
    rng = np.random.default_rng(3)
    a_np = rng.uniform(0.5, 2.0, (19, 37)).astype(np.float32)
    b_np = rng.uniform(-2.0, -0.5, (19, n)).astype(np.float32)
    out = np.full((37, n), np.nan, np.float32)
    run(kernel.lowered, [a_np, b_np, out])
    np.testing.assert_allclose(out, a_np.T @ b_np, rtol=1e-5)


@pytest.mark.parametrize("size", [4096, 4000])
def test_gpu_gemm_keeps_its_tile_in_registers(size):
    """Left to itself ptxas keeps everything in registers; asked for two blocks per
    multiprocessor it stays within 128 (spilling a few words of addresses)."""
    kernel = gpu_gemm.build(size, size, size, target="cuda")
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    assert report.registers <= 168, report.log
    assert assemble(gpu_gemm.build(size, size, size).ptx).registers <= 128
    assert "ld.shared.v4" in kernel.ptx and "ld.shared.b32" not in kernel.ptx
    assert "ld.global.nc.v4" in kernel.ptx


def _random(rng, shape):
    values = rng.uniform(0.5, 2.0, shape) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return values.astype(np.float32)


def test_gpu_gemm_in_groups_of_block_columns_keeps_its_tile_in_registers():
    """Splitting a block loop and fusing it with the other makes the block's position a
    quasi-affine function of the output indices; the register tile's offsets are read off the
    loops, so its indices stay constants (before, selects over the fused index put it in local
    memory: 4x slower)."""
    kernel = gpu_gemm.build(4096, 4096, 4096, group=8)
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    assert "ld.local" not in kernel.ptx and "st.local" not in kernel.ptx


def test_gpu_gemm_groups_divide_the_block_columns():
    """A ragged last group of columns would make the grid depend on a loop (a LoweringError):
    the group shrinks to the largest divisor of the column count instead (8 columns at 1000:
    groups of 2 for 3)."""
    kernel = gpu_gemm.build(1000, 1000, 1000, target="cuda -arch=sm_90", group=3)
    (plan,) = kernel._compiled.plan.kernels
    assert [int(e.value) for e in plan.grid[:2]] == [8 * 2, 8 // 2]
    assemble(kernel.ptx)
    with pytest.raises(ValueError, match="group= needs a constant"):
        at, b, c = gpu_gemm.gemm(64, sl.var("n"), 64)
        gpu_gemm.schedule(at, b, c, group=2)


def test_vector_add_at_a_size_that_is_not_a_multiple_of_a_block():
    kernel = gpu_elementwise.build(5003)
    rng = np.random.default_rng(4)
    a, b = _random(rng, 5003), _random(rng, 5003)
    c = np.full(5003, np.nan, np.float32)
    run(kernel.lowered, [a, b, c])
    np.testing.assert_array_equal(c, a + b)
    ptx = gpu_elementwise.build(1 << 20).ptx
    assert "ld.global.nc.v4" in ptx and "st.global.v4" in ptx


def test_transpose_through_padded_shared_tiles():
    kernel = gpu_transpose.build(70, 45)
    rng = np.random.default_rng(5)
    a = _random(rng, (70, 45))
    t = np.full((45, 70), np.nan, np.float32)
    run(kernel.lowered, [a, t])
    np.testing.assert_array_equal(t, a.T)
    (config,) = kernel.launch_config
    assert config.shared_bytes == 32 * 33 * 4  # rows padded to 33 floats


def test_row_sum_and_softmax():
    rng = np.random.default_rng(6)
    x, total = gpu_rows.row_sum(5, 3000)
    kernel = sl.build(gpu_rows.sum_schedule(total), [x, total], target="cuda")
    a = _random(rng, (5, 3000))
    out = np.full(5, np.nan, np.float32)
    run(kernel.lowered, [a, out])
    np.testing.assert_allclose(out, a.astype(np.float64).sum(1), rtol=1e-4)
    tensors = gpu_rows.softmax(3, 1000)
    s = gpu_rows.softmax_schedule(*tensors)
    kernel = sl.build(s, [tensors[0], tensors[-1]], target="cuda")
    a = _random(rng, (3, 1000)) * 3
    out = np.full((3, 1000), np.nan, np.float32)
    run(kernel.lowered, [a, out])
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(1, keepdims=True), rtol=1e-5)


def test_conv2d_recipe_at_small_tiles():
    n, c, f, size = 8, 6, 8, 5
    kernel = gpu_conv2d.build(n, c, f, size, tile=2, num_thread=2, vthread=2, step=4)
    rng = np.random.default_rng(7)
    a, w = _random(rng, (size, size, c, n)), _random(rng, (3, 3, c, f))
    out = np.full((size, size, f, n), np.nan, np.float32)
    run(kernel.lowered, [a, w, out])
    np.testing.assert_allclose(out, _direct_conv(a, w, size), rtol=1e-5, atol=1e-5)


def _direct_conv(a, w, size):
    padded = np.pad(a.astype(np.float64), ((1, 1), (1, 1), (0, 0), (0, 0)))
    return sum(
        np.einsum("yxcn,cf->yxfn", padded[ry : ry + size, rx : rx + size], w[ry, rx])
        for ry in range(3)
        for rx in range(3)
    )


@pytest.mark.parametrize("m", [2, 4, 6])
def test_winograd_matrices_compute_the_correlation(m):
    at, g, bt = gpu_winograd.matrices(m)
    rng = np.random.default_rng(m)
    for _ in range(5):
        d, f = rng.standard_normal(m + 2), rng.standard_normal(3)
        np.testing.assert_allclose(
            at @ ((g @ f) * (bt @ d)), np.correlate(d, f, "valid"), atol=1e-12
        )


@pytest.mark.parametrize(("m", "size"), [(4, 6), (2, 5)])
def test_winograd_at_small_tiles(m, size):
    """Sizes that leave partial tiles of outputs (6 = 4 + 2) and of the GEMM."""
    n, c, f = 3, 5, 7
    a_t, w_t, b_t, stages = gpu_winograd.winograd(n, c, f, size, m)
    s = gpu_winograd.schedule(b_t, stages, m, 32, block=16, threads=4, vthreads=2, step=4)
    kernel = sl.build(s, [a_t, w_t, b_t], target="cuda")
    rng = np.random.default_rng(9)
    a, w = _random(rng, (size, size, c, n)), _random(rng, (3, 3, c, f))
    out = np.full((size, size, f, n), np.nan, np.float32)
    run(kernel.lowered, [a, w, out])
    want = _direct_conv(a, w, size)
    # Winograd rounds differently from the direct sum: errors of a few ulps of the largest value
    error = np.abs(out - want).max() / np.abs(want).max()
    assert error < 1e-5, error


def test_winograd_at_its_benchmark_shape_stays_in_registers():
    """Four kernels (filter and input transforms, the batched GEMM, the output transform), none
    spilling; the GEMM keeps its 16-byte loads."""
    kernel = gpu_winograd.build(256, 256, 512, 14)
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    assert kernel.ptx.count(".entry") == 4
    assert "ld.global.nc.v4" in kernel.ptx and "ld.shared.v4" in kernel.ptx


def test_conv2d_recipe_at_its_own_shape_stays_in_registers():
    kernel = gpu_conv2d.build(256, 256, 512, 14)
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    assert "ld.global.nc.v4" in kernel.ptx and "st.shared.v4" in kernel.ptx


def test_gpu_gemm_writes_c_in_vectors_without_a_warning():
    """Its vectorized store loop surrounds the thread loops (the GPU lowering moves them
    innermost); each thread's part is straight-line code that LLVM stores 16 bytes at a time,
    so there is nothing to warn about."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", sl.SchedlangWarning)
        kernel = gpu_gemm.build(4096, 4096, 4096)
    assert kernel.ptx.count("st.global.v4") == 16 and "st.global.f32" not in kernel.ptx


def _attention_schedule(how: str, tensors) -> sl.Schedule:
    if how == "fused":
        return gpu_attention.fused_schedule(*tensors, factor=8, rows=16, unroll=False)
    return gpu_attention.schedule(*tensors, factor=8, threads=32)


def attention_reference(q, k, v, causal: bool) -> np.ndarray:
    """Attention in float64, a key after its query masked out under `causal`."""
    wide = [x.astype(np.float64) for x in (q, k, v)]
    scores = np.einsum("bid,bjd->bij", wide[0], wide[1]) * q.shape[-1] ** -0.5
    if causal:
        n = q.shape[1]
        scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
    p = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.einsum("bij,bjd->bid", p, wide[2]) / p.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("how", ["stages", "fused"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_in_one_online_pass_simulated(how, dtype, causal):
    """Attention's definition fused by online, at a length the block of keys does not divide,
    against float64 numpy, in the SIMT interpreter: a kernel per stage (the scan's steps
    launched by the host), or one kernel with the scan inside each thread's row."""
    import ml_dtypes

    bh, n, d = 2, 37, 8
    tensors = gpu_attention.attention(bh, n, d, dtype, causal)
    kernel = sl.build(_attention_schedule(how, tensors), [*tensors[:3], tensors[-1]], "cuda")
    if how == "fused":
        assert "allocate S: float32[1, 1, 8] in local" in str(kernel.lowered)
    np_dtype = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((bh, n, d)).astype(np_dtype) for _ in range(3))
    out = np.full((bh, n, d), np.nan, np_dtype)
    kernel.simulate(q, k, v, out)
    rounding = 1e-3 if dtype == "float16" else 8e-3  # the output's own rounding
    want = attention_reference(q, k, v, causal)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=rounding * 4)


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["stages", "fused"])
def test_attention_in_one_online_pass_on_the_gpu(how):
    bh, n, d = 3, 100, 16
    tensors = gpu_attention.attention(bh, n, d, "float16", causal=True)
    kernel = sl.build(_attention_schedule(how, tensors), [*tensors[:3], tensors[-1]], "cuda")
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((bh, n, d)).astype(np.float16) for _ in range(3))
    out = np.full((bh, n, d), np.nan, np.float16)
    kernel(q, k, v, out)
    want = attention_reference(q, k, v, causal=True)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=4e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_the_bfloat16_tensor_core_attention_on_the_gpu(causal):
    """The benchmark's kernel at d = 128 in bfloat16 (a producer warpgroup, the overlap, the
    lagging reference): its probabilities rounded by LLVM's own conversion and paired before
    each run of products."""
    import ml_dtypes

    shape = (3, 640, 128)
    tensors = gpu_attention.tensor_core_attention(*shape, "bfloat16", causal)
    options = dict(keys=128, stages=3, tma=True, warp_specialize=True, overlap=True)
    s = gpu_attention.wgmma_schedule(*tensors, **options, threshold=8.0)
    kernel = sl.build(s, _io(tensors), "cuda")
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for _ in range(3))
    out = np.full(shape, np.nan, ml_dtypes.bfloat16)
    kernel(q, k, v, out)
    want = attention_reference(q, k, v, causal)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize(("dtype", "causal"), [("float16", False), ("bfloat16", True)])
def test_attention_stored_by_the_copy_engine_on_the_gpu(dtype, causal):
    """The output stored by the copy engine, staged in K's shared tiles once the last step's
    scores have read them (Q's tile and K's and V's three stages leave no other room at d =
    128)."""
    import ml_dtypes

    shape = (3, 640, 128)
    tensors = gpu_attention.tensor_core_attention(*shape, dtype, causal)
    options = dict(keys=128, stages=3, tma=True, warp_specialize=True, overlap=True)
    s = gpu_attention.wgmma_schedule(*tensors, **options, threshold=8.0, store_tma=True)
    kernel = sl.build(s, _io(tensors), "cuda")
    numpy_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    rng = np.random.default_rng(12)
    q, k, v = (rng.standard_normal(shape).astype(numpy_dtype) for _ in range(3))
    out = np.full(shape, np.nan, numpy_dtype)
    kernel(q, k, v, out)
    want = attention_reference(q, k, v, causal)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=2e-2)


def test_attention_stores_by_the_copy_engine_from_k_s_tiles():
    """At d = 128 with three stages the block's shared memory is full (Q 32 KB, K and V 192
    KB): the output's staging takes the start of K's region (the largest read for the last
    time before the stores), after a barrier of the consumer warpgroups, and the kernel's
    shared memory does not grow."""
    tensors = gpu_attention.tensor_core_attention(2, 256, 128)
    options = dict(keys=128, stages=3, tma=True, warp_specialize=True)
    plans = []
    for store_tma in (False, True):
        s = gpu_attention.wgmma_schedule(*tensors, **options, store_tma=store_tma)
        kernel = sl.build(s, _io(tensors), "cuda -arch=sm_90a")
        plans.append(kernel._compiled.plan.kernels[0])
    assert plans[1].shared.nbytes == plans[0].shared.nbytes
    shared = {
        a.buffer.name: plans[1].shared.region(a)
        for a in walk_stmt(plans[1].body)
        if isinstance(a, Allocate) and a.buffer.scope == "shared"
    }
    assert shared["store.staging"][0] == shared["K.shared"][0]
    assert shared["store.staging"][1] <= shared["K.shared"][1]
    assert "barrier(first 256 threads)" in str(plans[1].body)


def test_fused_attention_masks_without_repeating_its_exps():
    """Unrolled over the keys and the head dimension, a causal block's copies share their
    mask's guard (`loopir.gpu.merge_guards`): each score's exp is computed once per stage, as
    without the mask, not once per element of the output row it weights."""
    counts = {}
    for causal in (False, True):
        tensors = gpu_attention.attention(2, sl.var("n"), 16, "float16", causal)
        s = gpu_attention.fused_schedule(*tensors, factor=8, rows=16)
        ptx = sl.build(s, [*tensors[:3], tensors[-1]], "cuda").ptx
        counts[causal] = ptx.count("ex2.approx")
    assert counts[True] <= counts[False] + 2 < 2 * 8 * 16


@pytest.mark.parametrize("causal", [False, True])
def test_fused_attention_unrolled_simulated(causal):
    bh, n, d = 2, 29, 8
    tensors = gpu_attention.attention(bh, n, d, "float16", causal)
    s = gpu_attention.fused_schedule(*tensors, factor=8, rows=16)
    kernel = sl.build(s, [*tensors[:3], tensors[-1]], "cuda")
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((bh, n, d)).astype(np.float16) for _ in range(3))
    out = np.full((bh, n, d), np.nan, np.float16)
    kernel.simulate(q, k, v, out)
    want = attention_reference(q, k, v, causal)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=4e-3)


@pytest.mark.parametrize(
    ("n", "d", "rows", "causal"),
    [(128, 64, 128, False), (192, 128, 64, False), (128, 64, 64, True), (192, 64, 128, True)],
)
def test_attention_on_the_tensor_cores_simulated(n, d, rows, causal):
    """Both products by wgmma, the probabilities rounded to float16 in registers as the second
    one's A operand, the scan inside each warpgroup's rows; against float64 numpy (the rounding
    of the probabilities, as FlashAttention's, within the output's). A causal mask zeroes the
    kept probabilities, so that the product takes no mask of its own."""
    bh = 2
    tensors = gpu_attention.tensor_core_attention(bh, n, d, causal=causal)
    kernel = sl.build(gpu_attention.wgmma_schedule(*tensors, rows=rows), _io(tensors), "cuda")
    text = str(kernel.lowered)
    assert "in wgmma.accumulator" in text and "over groups of 4 lanes" in text
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((bh, n, d)).astype(np.float16) for _ in range(3))
    out = np.full((bh, n, d), np.nan, np.float16)
    kernel.simulate(q, k, v, out)
    want = attention_reference(q, k, v, causal=causal)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=4e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_on_the_tensor_cores_copies_k_and_v_a_step_ahead(causal):
    """V's tile is filled after the scores in the step's order, but nothing in between touches
    it: its copy joins K's at the start of the step, both issued a step ahead (`pipeline`),
    under a causal mask too (its steps stop at the diagonal)."""
    tensors = gpu_attention.tensor_core_attention(2, 256, 64, causal=causal)
    text = str(sl.lower(gpu_attention.wgmma_schedule(*tensors, stages=2), _io(tensors)))
    step = text[text.index("for j.step in") :]
    copies = [step.index(f"{name}.shared[j.step % 2, 0, ") for name in "KV"]  # the next copy
    assert step.index("async_wait(pending=0)") < min(copies)
    assert max(copies) < step.index("async_commit()") < step.index("+= wgmma(Q.shared")
    assert "@ K.shared[(j.step - 1) % 2" in step


def test_causal_attention_on_the_tensor_cores_runs_its_diagonal_blocks_apart():
    """Under a causal mask a block of 128 rows steps to its diagonal only (`poly.scan_live`),
    and the steps below the diagonal blocks, where every mask holds, run in a loop of their
    own without the mask's compares or the guard around the scores' product
    (`loopir.loops.full_steps`); without a mask there is one loop."""
    texts = {}
    for causal in (False, True):
        tensors = gpu_attention.tensor_core_attention(2, 256, 64, causal=causal)
        kernel = sl.build(gpu_attention.wgmma_schedule(*tensors), _io(tensors), "cuda")
        texts[causal] = str(kernel.lowered)
    assert texts[False].count("for j.step in") == 1
    text = texts[True]
    below = text.index("for j.step in range(1, 1 + 2 * i.outer):")
    diagonal = text.index("for j.step in range(2 * i.outer + 1, 2 * i.outer + 3):")
    full = text[below:diagonal]
    guards = [line.strip() for line in full.splitlines() if line.strip().startswith("if ")]
    assert guards == ["if j.step + 1 < 2 * i.outer + 3:"]  # the copy of the next step's K, V
    assert "+= wgmma(Q.shared" in full and "select(" not in full
    masked = text[diagonal:]
    assert "select(" in masked
    # the keys' bound (256) is implied by the block's range; the mask compares a thread's
    # value with a constant, free of the block's index (`loopir.loops.gist_guards`)
    assert "< 256" not in masked and "<= 128 * i.outer" not in masked


def test_attention_on_the_tensor_cores_takes_p_from_registers():
    tensors = gpu_attention.tensor_core_attention(2, 128, 64)
    ptx = sl.build(gpu_attention.wgmma_schedule(*tensors), _io(tensors), "cuda").ptx
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in ptx
    assert len(re.findall(r"wgmma\.mma_async[^;]*\{%r\d+, %r\d+, %r\d+, %r\d+\}", ptx)) == 4


def test_attention_on_the_tensor_cores_normalises_by_one_reciprocal_a_row():
    """``O * (1 / Z)``: a thread's two rows take a correctly rounded reciprocal each, its 32
    outputs at d = 64 a multiplication each; no division, whose correctly rounded form is a
    dozen instructions and a branch to a slow path."""
    tensors = gpu_attention.tensor_core_attention(2, 128, 64)
    ptx = sl.build(gpu_attention.wgmma_schedule(*tensors), _io(tensors), "cuda").ptx
    assert ptx.count("rcp.rn.f32") == 2 and "div.rn.f32" not in ptx


def test_attention_on_the_tensor_cores_accumulates_the_output_in_place():
    """The second product runs onto the running output, rescaled first
    (`loopir.gpu.accumulate_in_place`): one accumulator of the output's size a warpgroup, not
    two. At d = 128 a 64 x 128 score tile then fits: the register estimate refused 128 keys
    a step there, and ptxas assembles it without spills."""
    tensors = gpu_attention.tensor_core_attention(2, 256, 128)
    kernel = sl.build(gpu_attention.wgmma_schedule(*tensors, keys=128), _io(tensors), "cuda")
    text = str(kernel.lowered)
    assert "O_block" not in text
    assert "O.run[0, 0, 0:+64, 0:+128] += wgmma(M.online.P16_block" in text
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes <= 16, report.log


@pytest.mark.parametrize(
    ("n", "d", "keys", "stages", "causal"),
    [(256, 64, 64, 2, False), (320, 64, 64, 3, True), (384, 128, 128, 2, True)],
)
def test_attention_with_k_and_v_by_the_copy_engine_simulated(n, d, keys, stages, causal):
    """K's and V's blocks by the copy engine, issued by the block's first thread between its
    own work (``pipeline(tma=True, warp_specialize=False)``): no producer warp, no block
    barrier in the steps; a warp releases a stage once, at the end of the step that read it,
    in both loops of a causal block's steps."""
    bh = 2
    tensors = gpu_attention.tensor_core_attention(bh, n, d, causal=causal)
    s = gpu_attention.wgmma_schedule(*tensors, keys=keys, stages=stages, tma=True)
    kernel = sl.build(s, _io(tensors), "cuda")
    text = str(kernel.lowered)
    releases = re.findall(r"mbarrier_arrive\(K\.shared\.empty.*", text)
    assert releases and all("once a warp)" in line for line in releases)
    assert "producer" not in text and "barrier()" not in text[text.index("for j.step") :]
    _simulated_right(kernel, (bh, n, d), causal, seed=11)


@pytest.mark.parametrize(
    ("causal", "tma", "blocks", "stages"),
    [
        (False, True, 4, 2),
        (True, True, 4, 2),
        (True, True, 3, 2),
        (True, False, 3, 2),
        (True, True, 5, 2),
        (True, True, 3, 4),
    ],
)
def test_persistent_attention_blocks_take_the_tiles_in_turn_simulated(causal, tma, blocks, stages):
    """`blocks` blocks for the 6 tiles of (head, 128 rows): each takes its tiles in turn, the
    copy engine's pipeline counted across them (its barriers set up once a block). Under a
    causal mask with 4 blocks a block's tiles are all the same rows of their heads, so they
    step to one diagonal; with 3 or 5 they do not, and the steps are counted in a register
    (with 5, block 0 takes a tile of 2 steps then one of 4). With 4 stages a tile of 2 steps
    cannot fill the next tile's first 3: that tile fills the one left itself."""
    bh, n, d = 3, 256, 64
    tensors = gpu_attention.tensor_core_attention(bh, n, d, causal=causal)
    s = gpu_attention.wgmma_schedule(*tensors, persistent=blocks, tma=tma, stages=stages)
    kernel = sl.build(s, _io(tensors), "cuda")
    text = str(kernel.lowered)
    tiles = text.index("for b.i.outer.fused.outer in range(")
    if tma:
        assert text.index("mbarrier_init(") < tiles < text.index("for j.step in")
        counted = "let K.shared.base = K.shared.steps[0]" in text
        assert counted == (causal and blocks != 4)
    _simulated_right(kernel, (bh, n, d), causal, seed=12)


@pytest.mark.parametrize(
    ("d", "causal", "stages", "blocks"), [(64, False, 2, 0), (128, True, 3, 0), (64, True, 2, 3)]
)
def test_the_second_products_overlap_the_next_steps_softmax_simulated(d, causal, stages, blocks):
    """``overlap=True``: a step's products of P and V are issued in the next step, after its
    scores' products (reading the stage of the step before, ``j.step - 2``), before
    its softmax; the first step's softmax and the last step's products stand outside the
    loop. Simulated against float64, also under a mask and on persistent blocks."""
    bh, n = 3, 256
    tensors = gpu_attention.tensor_core_attention(bh, n, d, causal=causal)
    s = gpu_attention.wgmma_schedule(
        *tensors, stages=stages, tma=True, overlap=True, persistent=blocks
    )
    assert ".op.axis[0], 'overlap_products', None)" in str(s)  # the step axis
    kernel = sl.build(s, _io(tensors), "cuda")
    step = str(kernel.lowered).split("for j.step in range(")[1]
    scores = step.index("S[0, 0:+64, 0:+64] += wgmma(")
    second = step.index("+= wgmma(M.online.P16_block")
    assert "(j.step - 2)" in step[second:].splitlines()[0]  # the stage of the step before
    assert scores < second < step.index("M.online.block_max")
    # the copy waiting for the step before's release is issued before this step's products
    assert step.index("mbarrier_wait(K.shared.empty[") < scores
    _simulated_right(kernel, (bh, n, d), causal, seed=13)


def test_the_second_products_run_while_the_softmax_runs():
    """In the PTX, the softmax's exponentials stand between a wait that leaves the newest
    group of products running (the second products) and the wait for all of them; ptxas
    keeps the products in flight and spills nothing. K's and V's stages share one pair of
    barriers, released once the step's products are done (each its own barriers, K's released
    after the scores, was 15% slower on the H200: NOTES)."""
    tensors = gpu_attention.tensor_core_attention(2, 4096, 128)
    s = gpu_attention.wgmma_schedule(*tensors, keys=128, stages=3, tma=True, overlap=True)
    kernel = sl.build(s, _io(tensors), "cuda")
    ptx = kernel.ptx
    loop = ptx[ptx.index("wgmma.wait_group.sync.aligned 1;") :]
    assert "ex2.approx" in loop[: loop.index("wgmma.wait_group.sync.aligned 0;")]
    # each probability's exponential is computed once a step, for the row sums and for P
    # (the running maximum read again after the wait): 64 a thread, and the rescales of the
    # sums' and the output's two rows
    body = loop[: loop.index("wgmma.fence.sync.aligned;")]
    assert body.count("ex2.approx") == 64 + 4
    report = assemble(ptx)
    assert "serialized" not in report.log and report.spill_bytes == 0, report.log
    assert not releases_in_flight(ptx)
    (config,) = kernel.launch_config  # the barriers beside 224 KB of tiles
    assert 224 * 1024 < config.shared_bytes <= 227 * 1024
    text = str(kernel.lowered)
    assert "products_pending=1" not in text and "V.shared.full" not in text


@pytest.mark.parametrize(
    ("d", "dtype", "causal", "options"),
    [
        (128, "bfloat16", True, dict(stages=3, tma=True, overlap=True, warp_specialize=True)),
        (128, "float16", True, dict(stages=3, tma=True, overlap=True, warp_specialize=True)),
        (64, "float16", False, {}),
    ],
)
def test_the_probabilities_registers_are_made_before_the_products_fence(
    d, dtype, causal, options
):
    """P's registers (the A operand of ``P V``) are paired before the run's ``wgmma.fence``:
    bfloat16 probabilities rounded one by one, and a diagonal step's, were paired at each
    product, after the fence, and ptxas fenced those products again (C7519: 21 in the causal
    bfloat16 kernel, 7 in the float16 ones)."""
    tensors = gpu_attention.tensor_core_attention(16, 4096, d, dtype, causal)
    s = gpu_attention.wgmma_schedule(*tensors, keys=128, **options)
    report = assemble(sl.build(s, _io(tensors), "cuda").ptx)
    assert "C7519" not in report.log and "serialized" not in report.log, report.log
    assert report.spill_bytes == 0


@pytest.mark.parametrize("overlap", [False, True])
def test_persistent_causal_attention_keeps_its_registers(overlap):
    """On persistent blocks the causal diagonal step is straight code (its loop's bounds come
    in two forms, one step apart: `loops.single_steps`), and nothing is hoisted out of the
    tile loop (a mask's offsets kept live across every step): ptxas had 255 registers and
    spilled, and serialised the overlapped kernel's products. It now takes up to 254
    registers without spilling or serialising (the running maximum's two halves in registers
    of their own, `gpu.rotate_parity`; 234 without the overlap while they were a stack
    slot)."""
    tensors = gpu_attention.tensor_core_attention(64, 4096, 128, causal=True)
    s = gpu_attention.wgmma_schedule(
        *tensors, keys=128, stages=3, tma=True, persistent=132, overlap=overlap
    )
    kernel = sl.build(s, _io(tensors), "cuda")
    assert str(kernel.lowered).count("for j.step in range(") == 1
    back_edges = [
        line
        for line in kernel.llvm_ir.splitlines()
        if 'br label %"b.i.outer.fused.outer.head"' in line and "!llvm.loop" in line
    ]
    assert len(back_edges) == 1 and "llvm.licm.disable" in kernel.llvm_ir
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and "serialized" not in report.log, report.log


@pytest.mark.parametrize("causal", [False, True])
def test_a_producer_warpgroup_hands_its_registers_to_the_consumers(causal):
    """``warp_specialize=True`` at d = 128: a producer warpgroup beside the two consumer ones
    (384 threads: 168 registers a thread at entry, too few for the consumers' accumulators).
    The roles part at the producer's loop for good (a causal mask's diagonal step, straight
    code, holds both roles' statements: each goes to its branch), the producer keeps 24
    registers, each consumer thread gets 240, and ptxas honours it: no spills, setmaxnreg
    not ignored (C7508), products not serialised. Simulated against float64."""
    tensors = gpu_attention.tensor_core_attention(64, 4096, 128, causal=causal)
    options = dict(keys=128, stages=3, tma=True, warp_specialize=True)
    s = gpu_attention.wgmma_schedule(*tensors, **options)
    kernel = sl.build(s, _io(tensors), "cuda")
    (plan,) = kernel._compiled.plan.kernels
    assert plan.registers == 240 and plan.block == (32, 4, 3)
    parted = stmt_str(plan.body)
    assert parted.count("set_registers(24, fewer)") == parted.count("set_registers(240, more)") == 1
    roles = parted.split("set_registers(240, more)")
    assert "mbarrier_arrive(K.shared.full" not in roles[1]  # the producer's statements apart
    assert "wgmma(" not in roles[0].split("set_registers(24, fewer)")[1]
    ptx = kernel.ptx
    assert ".minnctapersm 1" in ptx and "setmaxnreg.inc.sync.aligned.u32 \t240;" in ptx
    report = assemble(ptx)
    assert report.spill_bytes == 0 and "C7508" not in report.log, report.log
    assert "serialized" not in report.log
    with pytest.raises(sl.LoweringError, match="-min-blocks-per-sm=2 asks for 2"):
        sl.build(s, _io(tensors), "cuda -min-blocks-per-sm=2")
    small = gpu_attention.tensor_core_attention(3, 384, 128, causal=causal)
    s = gpu_attention.wgmma_schedule(*small, **options)
    _simulated_right(sl.build(s, _io(small), "cuda"), (3, 384, 128), causal, seed=14)


@pytest.mark.parametrize("causal", [False, True])
def test_the_producer_warpgroups_pipeline_overlaps_the_second_products(causal):
    """``warp_specialize=True, overlap=True``: the rotated step on a producer warpgroup's
    pipeline releases step j - 1's stage in step j once its second products are done
    (they run beside step j's softmax), and the producer's copies stay in every step. With
    the registers handed over ptxas spills nothing and keeps the products in flight.
    Simulated against float64 (the simulator orders the roles by their memory barriers)."""
    tensors = gpu_attention.tensor_core_attention(64, 4096, 128, causal=causal)
    options = dict(keys=128, stages=3, tma=True, warp_specialize=True, overlap=True)
    kernel = sl.build(gpu_attention.wgmma_schedule(*tensors, **options), _io(tensors), "cuda")
    assert kernel._compiled.plan.kernels[0].registers == 240
    step = str(kernel.lowered).split("for j.step in range(")[1]
    second = step.index("+= wgmma(M.online.P16_block")
    assert "(j.step - 2)" in step[second:].splitlines()[0]  # the products of the step before
    release = step.index("mbarrier_arrive(K.shared.empty[")
    assert second < release < step.index("M.online.P16_block.slot[")
    assert "products_pending" not in step[release:].splitlines()[0]  # all products done
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and "serialized" not in report.log, report.log
    small = gpu_attention.tensor_core_attention(3, 640, 128, causal=causal)
    s = gpu_attention.wgmma_schedule(*small, **options)
    _simulated_right(sl.build(s, _io(small), "cuda"), (3, 640, 128), causal, seed=21)


def test_an_overlapped_diagonal_loop_releases_the_stage_of_the_step_before_it():
    """Causal, 64 keys a step, 2 stages, a producer warpgroup, overlapped: the steps below the
    diagonal and the diagonal's two steps are two rotated loops, and a producer's pipeline
    releases step j - 1's stage in step j; the diagonal loop's first step must release the
    last stage of the loop before it, or the producer waits for it for ever (found by the
    fuzzer: the simulator's mbarrier model reported the wait)."""
    tensors = gpu_attention.tensor_core_attention(1, 256, 64, causal=True)
    options = dict(keys=64, stages=2, tma=True, overlap=True, warp_specialize=True)
    kernel = sl.build(gpu_attention.wgmma_schedule(*tensors, **options), _io(tensors), "cuda")
    _simulated_right(kernel, (1, 256, 64), True, seed=3)


@pytest.mark.parametrize("causal", [False, True])
def test_the_consumer_warpgroups_take_turns_at_the_tensor_cores(causal):
    """``turns=True`` (``pragma(step, "take_turns")``): each consumer warpgroup waits for its
    turn (``bar.sync`` on its own barrier) before a run of products and passes it on
    (``bar.arrive`` on the other's) once they are issued, not done; every warpgroup takes
    as many turns as it gives. ptxas spills nothing and serialises no product. Simulated
    against float64 (the simulator runs the warpgroups at once: turns order issue only)."""
    tensors = gpu_attention.tensor_core_attention(64, 4096, 128, causal=causal)
    options = dict(keys=128, stages=3, tma=True, warp_specialize=True, overlap=True)
    plain = sl.build(gpu_attention.wgmma_schedule(*tensors, **options), _io(tensors), "cuda")
    assert "bar.arrive z" not in plain.ptx  # the same loop IR: the compile cache tells them apart
    options["turns"] = True
    kernel = sl.build(gpu_attention.wgmma_schedule(*tensors, **options), _io(tensors), "cuda")
    (plan,) = kernel._compiled.plan.kernels
    producer, consumers = stmt_str(plan.body).split("set_registers(240, more)")
    assert "turn(" not in producer
    assert consumers.count("turn(take") == consumers.count("turn(give") >= 4
    ptx = kernel.ptx
    takes, gives = ptx.count("bar.sync z, 256;"), ptx.count("bar.arrive z, 256;")
    assert takes == gives == consumers.count("turn(take")
    first, *after_runs = [m.start() for m in re.finditer(r"bar\.arrive z", ptx)]
    assert "wgmma.mma_async" not in ptx[:first]  # the first turn given before any product
    for at in after_runs:
        last = re.findall(r"wgmma\.(commit_group|wait_group|mma_async)", ptx[:at])[-1]
        assert last == "commit_group"  # a give lets the turn's products run on
    report = assemble(ptx)
    assert report.spill_bytes == 0 and "serialized" not in report.log, report.log
    small = gpu_attention.tensor_core_attention(3, 640, 128, causal=causal)
    s = gpu_attention.wgmma_schedule(*small, **options)
    _simulated_right(sl.build(s, _io(small), "cuda"), (3, 640, 128), causal, seed=27)


def test_an_edge_blocks_turns_are_not_copied_into_branches():
    """Causal, L = 320 (the last block's rows leave the second warpgroup nothing), 64 keys a
    step: LLVM copied a turn's barrier into the two arms of a branch before it (found by the
    fuzzer: 6 `bar.sync` for 5 takes), where a warp whose threads took both arms would reach
    two barriers. The turns are convergent: each is one barrier in the PTX."""
    tensors = gpu_attention.tensor_core_attention(1, 320, 64, causal=True)
    options = dict(keys=64, stages=2, tma=True, warp_specialize=True, turns=True)
    kernel = sl.build(gpu_attention.wgmma_schedule(*tensors, **options), _io(tensors), "cuda")
    (plan,) = kernel._compiled.plan.kernels
    turns = [n for n in walk_stmt(plan.body) if isinstance(n, Turn)]
    assert any(t.when is not None for t in turns)  # the edge block's guard
    takes = sum(not t.give for t in turns)
    assert kernel.ptx.count("bar.sync z, 256;") == takes == kernel.ptx.count("bar.arrive z, 256;")


def test_persistent_blocks_over_a_part_tile_are_refused_by_the_placement_at_once():
    """A length that leaves a part tile of rows: the row's index through the fuse of heads and
    tiles, its split by the blocks and the tile's split with a tail gives footprints of
    hundreds of integer divisions, which isl took 7 minutes to bound and longer to refuse
    (found by the fuzzer; benchmarks/NOTES.md). The placement counts them and refuses first,
    naming the stage, its loops and the way out."""
    tensors = gpu_attention.tensor_core_attention(3, 320, 64)
    s = gpu_attention.wgmma_schedule(*tensors, keys=128, stages=2, persistent=2)
    started = time.perf_counter()
    with pytest.raises(sl.ScheduleError, match=r"a set of \d+ integer divisions") as refused:
        sl.build(s, _io(tensors), "cuda -arch=sm_90a")
    assert time.perf_counter() - started < 60  # about 2 s; the unbounded box took minutes
    assert "whole tiles" in str(refused.value) and "j.step" in str(refused.value)


def test_turns_need_a_producer_warpgroup():
    tensors = gpu_attention.tensor_core_attention(3, 640, 128)
    with pytest.raises(ValueError, match="pass warp_specialize=True"):
        gpu_attention.wgmma_schedule(*tensors, keys=128, stages=3, tma=True, turns=True)
    s = gpu_attention.wgmma_schedule(*tensors, keys=128, stages=3, tma=True)
    named = {stage.name: stage for stage in s.stages}
    update = named["M.online.M_update"]
    s[update].pragma(update.op.axis[0], "take_turns")
    with pytest.raises(sl.LoweringError, match="has a producer warpgroup whose consumers"):
        sl.build(s, _io(tensors), "cuda")


@pytest.mark.parametrize("overlap", [False, True])
def test_the_running_maximum_stays_in_registers(overlap):
    """The online scan's running maximum, this step's and the last one's picked by the step's
    parity, becomes two register sets that swap each step (`gpu.rotate_parity`): no local
    memory left in the kernel (the stores and loads of a stack slot stood on the chain from
    the row maximum to the exponentials). Simulated against float64."""
    tensors = gpu_attention.tensor_core_attention(64, 4096, 128)
    options = dict(keys=128, stages=3, tma=True, warp_specialize=True, overlap=overlap)
    kernel = sl.build(gpu_attention.wgmma_schedule(*tensors, **options), _io(tensors), "cuda")
    (step,) = [
        n for n in walk_stmt(kernel.lowered.body) if isinstance(n, For) and n.var.name == "j.step"
    ]
    loads = [x for n in walk_stmt(step) for e in stmt_exprs(n) for x in walk_expr(e)]
    read = {x.buffer.name for x in loads if isinstance(x, Load)}
    assert {"M.run.cur", "M.run.prev"} <= read and "M.run" not in read
    assert "ld.local" not in kernel.ptx and "st.local" not in kernel.ptx
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and "serialized" not in report.log, report.log
    small = gpu_attention.tensor_core_attention(3, 640, 128)
    s = gpu_attention.wgmma_schedule(*small, **options)
    _simulated_right(sl.build(s, _io(small), "cuda"), (3, 640, 128), False, seed=31)


def test_a_scan_of_one_step_has_nothing_to_overlap():
    """128 keys in one step: no loop is left to rotate, and the kernel is the one built
    without the pragma (found by the fuzzer, which drew it and got a refusal)."""
    tensors = gpu_attention.tensor_core_attention(1, 128, 64)
    options = dict(keys=128, stages=2, tma=True)
    plain = sl.build(gpu_attention.wgmma_schedule(*tensors, **options), _io(tensors), "cuda")
    s = gpu_attention.wgmma_schedule(*tensors, overlap=True, **options)
    kernel = sl.build(s, _io(tensors), "cuda")
    assert str(kernel.lowered) == str(plain.lowered)
    _simulated_right(kernel, (1, 128, 64), False, seed=3)


def test_a_producer_warpgroup_needs_the_copy_engine():
    tensors = gpu_attention.tensor_core_attention(2, 256, 64)
    with pytest.raises(ValueError, match="pass tma=True"):
        gpu_attention.wgmma_schedule(*tensors, warp_specialize=True)


def test_overlap_needs_the_copy_engine():
    tensors = gpu_attention.tensor_core_attention(2, 256, 64)
    s = gpu_attention.wgmma_schedule(*tensors, overlap=True)  # cp.async
    with pytest.raises(sl.LoweringError, match=r"pragma\(j.step, \"overlap_products\"\)"):
        sl.build(s, _io(tensors), "cuda")


def test_attention_by_the_copy_engine_keeps_its_products_in_flight():
    """The threads waiting for a stage leave their polling loop together (a vote): ptxas
    serialised every product of the kernel when the loop's exit could diverge (C7520)."""
    tensors = gpu_attention.tensor_core_attention(2, 512, 128, causal=True)
    s = gpu_attention.wgmma_schedule(*tensors, keys=128, stages=3, tma=True)
    ptx = sl.build(s, _io(tensors), "cuda").ptx
    report = assemble(ptx)
    assert "serialized" not in report.log and report.spill_bytes == 0, report.log
    # each warp releases K's and V's stage once the step's products are done
    assert not releases_in_flight(ptx)


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("d", "causal", "keys", "n", "tma"),
    [
        (64, False, 64, 320, False),
        (128, False, 64, 320, False),
        (64, True, 64, 320, False),
        (128, True, 128, 384, False),
        (64, True, 128, 640, True),
        (128, False, 128, 384, True),
        (128, True, 128, 512, True),
        (128, False, 128, 640, "persistent"),
        (128, True, 128, 640, "persistent"),
        (128, False, 128, 640, "overlap"),
        (128, True, 128, 384, "overlap"),
        (128, False, 128, 640, "producer"),
        (128, True, 128, 640, "producer"),
        (64, True, 64, 320, "producer"),
        (128, False, 128, 640, "producer, overlap"),
        (128, True, 128, 640, "producer, overlap"),
        (128, False, 128, 640, "producer, overlap, turns"),
        (128, True, 128, 640, "producer, overlap, turns"),
        (128, True, 128, 384, "producer, turns"),
        (64, True, 64, 320, "producer, turns"),
        (64, False, 64, 1024, "producer, overlap, turns"),
    ],
)
def test_attention_on_the_tensor_cores_on_the_gpu(d, causal, keys, n, tma):
    bh = 3
    tensors = gpu_attention.tensor_core_attention(bh, n, d, causal=causal)
    persistent = 7 if tma == "persistent" else 0  # 15 tiles: 3, 2, 2, ... a block
    stages = 3 if tma else 2
    s = gpu_attention.wgmma_schedule(
        *tensors,
        keys=keys,
        stages=stages,
        tma=bool(tma),
        persistent=persistent,
        overlap="overlap" in str(tma),
        warp_specialize="producer" in str(tma),
        turns="turns" in str(tma),
    )
    kernel = sl.build(s, _io(tensors), "cuda")
    rng = np.random.default_rng(10)
    q, k, v = (rng.standard_normal((bh, n, d)).astype(np.float16) for _ in range(3))
    out = np.full((bh, n, d), np.nan, np.float16)
    kernel(q, k, v, out)
    want = attention_reference(q, k, v, causal=causal)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=4e-3)


@pytest.mark.gpu
def test_attention_loaded_with_the_disk_cache_on_computes_right(monkeypatch, tmp_path):
    """With the disk cache on (the default) the kernel is built, stored and loaded as a user's
    is. Its PTX once went to the GPU as a cubin of the ptxas command, and this kernel (d = 64,
    copies by cp.async, no mask) then computed outputs 0.53 off on an H200, where the
    driver's own compilation of the same PTX computes right (benchmarks/NOTES.md)."""
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    bh, n = 4, 512
    tensors = gpu_attention.tensor_core_attention(bh, n, 64)
    s = gpu_attention.wgmma_schedule(*tensors, keys=128, stages=3)
    kernel = sl.build(s, _io(tensors), "cuda")
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((bh, n, 64)).astype(np.float16) for _ in range(3))
    out = np.full((bh, n, 64), np.nan, np.float16)
    kernel(q, k, v, out)
    want = attention_reference(q, k, v, causal=False)
    np.testing.assert_allclose(out.astype(np.float64), want, atol=4e-3)


def _io(tensors):
    return [*tensors[:3], tensors[-1]]


def _simulated_right(kernel, shape, causal: bool, seed: int) -> None:
    """`kernel` (attention of `shape`) computes the float64 reference in the simulator."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for _ in range(3))
    out = np.full(shape, np.nan, np.float16)
    kernel.simulate(q, k, v, out)
    np.testing.assert_allclose(
        out.astype(np.float64), attention_reference(q, k, v, causal), atol=4e-3
    )
