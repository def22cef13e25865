"""Tiles copied by the copy engine from a producer warp (``pipeline(stages, tma=True)``):
simulated on the CPU, assembled by ptxas for sm_90a, run on a Hopper GPU where there is one,
and every way such a schedule is refused.

The kernels are `examples/gpu_gemm_wgmma.py`'s with ``tma=True``. Inputs are random (never
zeros), outputs poisoned with NaN; results are compared with the numpy reference of the
unscheduled algorithm.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_conv2d_wgmma as conv_example
from examples import gpu_gemm_wgmma as example
from schedlang.schedule.errors import FactorError

from .ptxas import assemble, releases_in_flight
from .test_tensor_cores import _close, _inputs, _runs_right
from .test_wgmma import _built as wgmma_built
from .test_wgmma import _conv as wgmma_conv

CASES = [
    # (m, n, k), operands, output, schedule options
    ((128, 128, 128), "float16", "float32", dict(block_cols=64, stages=2)),
    ((128, 256, 192), "bfloat16", "bfloat16", dict(block_cols=128, stages=3)),
    ((256, 256, 256), "float16", "float32", dict(block_cols=256, stages=4)),
    ((192, 256, 128), "float16", "float16", dict(block_rows=192, block_cols=128, stages=2)),
    # the edges cut tiles along the rows and the columns: the copy engine reads zeros there
    ((200, 136, 128), "float16", "float32", dict(block_cols=64, stages=3)),
    ((130, 300, 64), "bfloat16", "float32", dict(block_cols=128, stages=2)),
    # the reduction ends inside a step: its last products run on zeros the copy engine wrote
    ((128, 128, 208), "float16", "float32", dict(block_cols=64, stages=2)),
    ((136, 64, 336), "bfloat16", "bfloat16", dict(block_cols=64, stages=3)),
    # persistent blocks (4 blocks for 6 tiles: 2, 2, 1, 1), one pipeline across their tiles
    ((256, 384, 128), "float16", "float32", dict(persistent=4, stages=3)),
    ((200, 136, 208), "bfloat16", "float32", dict(persistent=3, block_cols=64, stages=4)),
    # the last block row has 32 rows: its second warpgroup none (its products versioned out)
    ((160, 256, 208), "float16", "float16", dict(persistent=2, stages=3)),
    # the copies issued by the block's first thread, no producer warpgroup
    ((200, 136, 320), "float16", "float32", dict(block_cols=64, stages=3, warp_specialize=False)),
    ((256, 384, 128), "bfloat16", "float32", dict(persistent=4, stages=2, warp_specialize=False)),
]


def _built(shape, dtype, out, options):
    return wgmma_built(shape, dtype, out, dict(options, tma=True))


@pytest.mark.parametrize(("shape", "dtype", "out", "options"), CASES)
def test_simulated(shape, dtype, out, options):
    kernel, (a, b, c) = _built(shape, dtype, out, options)
    x, y, z = _inputs(*shape, dtype, out)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), out)


def test_a_symbolic_number_of_rows():
    m = sl.var("m")
    a, b, c = example.gemm(m, 128, 128)
    s = example.schedule(a, b, c, tma=True, block_cols=64, stages=2)
    kernel = sl.build(s, [a, b, c], target="cuda")
    for rows in (70, 192):
        x, y, z = _inputs(rows, 128, 128, "float16", "float32", seed=rows)
        kernel.simulate(x, y, z)
        _close(z, sl.reference(c, {a: x, b: y}), "float32")


def test_the_loop_nest():
    a, b, c = example.gemm(512, 512, 512)
    text = str(sl.lower(example.schedule(a, b, c, tma=True, block_cols=256, stages=4), [a, b, c]))
    # the producer is a third warpgroup (threadIdx.z 2 of 0-2), its thread 0 alone
    assert "for threadIdx.z.producer in range(0, 3):" in text
    assert "if threadIdx.z.producer == 2:" in text
    assert "mbarrier_init(A.shared.empty[0], arrivals=8)" in text  # the consumers' 8 warps
    assert "= bulk_copy(A[128 * i.outer, 64 * (k.outer + 3)], box 128 x 64)" in text
    assert "= bulk_copy(B[64 * (k.outer + 3), 256 * j.outer], box 64 x 256)" in text
    assert "expect_bytes=49152" in text  # 128 x 64 + 64 x 256 halves
    assert "mbarrier_wait(A.shared.full[k.outer % 4], parity=k.outer // 4 % 2)" in text
    assert "products_pending=1, once a warp) if k.outer > 0" in text
    assert "barrier()" in text and text.count("barrier()") == 1  # after the inits only
    assert "async_copy" not in text


def test_persistent_blocks_fill_the_next_tile_during_this_one():
    a, b, c = example.gemm(256, 384, 128)
    text = str(sl.lower(example.schedule(a, b, c, tma=True, persistent=4), [a, b, c]))
    # block b takes tiles b, b + 4, ...: the inner part of the tiles' split is the block's
    assert "for i.outer.j.outer.fused.inner in range(0, 4):  # blockIdx.x" in text
    tiles = text.index("for i.outer.j.outer.fused.outer in range(")
    assert text.index("= bulk_copy(") < tiles  # the first stages, before the tiles
    # the steps are counted across the tiles: the copy 2 steps ahead may be the next tile's
    assert "mbarrier_wait(A.shared.full[(i.outer.j.outer.fused.outer * 2 + k.outer) % 3]" in text
    assert "(i.outer.j.outer.fused.outer + 1)" in text  # the tile two steps ahead is the next


def test_persistent_blocks_at_a_symbolic_size_count_their_steps_in_a_register():
    """m symbolic: a block's tile loop runs to the most tiles a block may have, the tiles past
    the end guarded off, so a tile has its k steps or none. The steps taken are counted in a
    register (`K.shared.steps`); with 5 rows most tiles have none."""
    m = sl.var("m")
    a, b, c = example.gemm(m, 72, 208, "float16", "float16")
    s = example.schedule(a, b, c, block_cols=64, stages=3, tma=True, persistent=3)
    kernel = sl.build(s, [a, b, c], target="cuda")
    assert "let A.shared.base = A.shared.steps[0]" in str(kernel.lowered)
    for rows in (5, 70, 300):
        x, y, z = _inputs(rows, 72, 208, "float16", "float16", seed=rows)
        kernel.simulate(x, y, z)
        _close(z, sl.reference(c, {a: x, b: y}), "float16")


@pytest.mark.gpu
def test_persistent_blocks_at_a_symbolic_size_on_the_gpu():
    m = sl.var("m")
    a, b, c = example.gemm(m, 72, 208, "float16", "float16")
    s = example.schedule(a, b, c, block_cols=64, stages=3, tma=True, persistent=3)
    kernel = sl.build(s, [a, b, c], target="cuda")
    for rows in (5, 300):
        x, y, z = _inputs(rows, 72, 208, "float16", "float16", seed=rows)
        kernel(x, y, z)
        _close(z, sl.reference(c, {a: x, b: y}), "float16")


def test_a_pipeline_inside_a_serial_loop_it_cannot_count_across_is_refused():
    """A persistent block's turn split in two: the pipeline counts its steps across the inner
    loop only and would start again in every iteration of the outer one, its barriers set up
    anew while threads may still wait on them."""
    a, b, c = example.gemm(256, 384, 128)
    s = example.schedule(a, b, c, tma=True, persistent=2)
    block, turn = s[c].leaf_iter_vars[:2]
    assert block.var.name.endswith("fused.inner") and turn.var.name.endswith("fused.outer")
    s[c].split(turn, factor=2)
    with pytest.raises(
        sl.LoweringError, match=r"inside the serial loop i\.outer\.j\.outer\.fused\.outer\.outer"
    ):
        sl.build(s, [a, b, c], target="cuda")


def test_persistent_convolution_blocks_fill_the_next_tile_during_this_one():
    """The tiles' four loops fused and shared among blocks: each tile index a division of the
    block's tile, the fills one box each, one pipeline across a block's tiles."""
    a, w, c = conv_example.conv2d(2, 3, 256, 64, 128)
    s = conv_example.schedule(a, w, c, tma=True, block_cols=64, stages=3, persistent=4)
    text = str(sl.lower(s, [a, w, c]))
    tiles = text.index("for h.x.n.outer.o.outer.fused.inner in range(0, min(6, ")
    assert text.index("mbarrier_init(") < text.index("= bulk_copy(") < tiles
    assert "let h = h.x.n.outer.o.outer.fused // 12" in text
    assert "select(" not in text
    # the steps are counted across the tiles: a copy two steps ahead may be the next tile's
    assert "mbarrier_wait(Apad.shared.full[(h.x.n.outer.o.outer.fused.inner * 9 + " in text


def test_products_run_whole_steps_over_the_zeros_past_the_reduction():
    a, b, c = example.gemm(256, 256, 4000)
    piped = str(sl.lower(example.schedule(a, b, c, tma=True, stages=4), [a, b, c]))
    assert "for k.inner.outer in range(0, 4):" in piped
    plain = str(sl.lower(example.schedule(a, b, c, stages=4), [a, b, c]))
    assert "for k.inner.outer in range(0, min(3, -4 * k.outer + 249) + 1):" in plain


def test_the_ptx_keeps_the_products_in_flight():
    kernel, _ = _built((1024, 1024, 512), "float16", "float32", dict(block_cols=256, stages=4))
    ptx = kernel.ptx
    assert ".target sm_90a" in ptx
    assert re.search(r"\.param \.align 64 \.b8 main_kernel0_param_\d+\[128\]", ptx)
    assert "cvta.param.u64" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx" in ptx
    assert "mbarrier.arrive.expect_tx.shared::cta.b64" in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert "wgmma.wait_group.sync.aligned 1;" in ptx  # the newest group runs on
    assert ".maxntid 32, 4, 3" in ptx
    report = assemble(ptx)
    assert report.spill_bytes == 0
    assert "serialized" not in report.log, report.log


def test_a_persistent_block_keeps_no_branch_between_its_products():
    """A warpgroup with no rows in a tile skips its products: the guard is the same for the
    whole k loop, which is versioned on it (`loopir.loops.unswitch`), so no branch stands between
    the products that ptxas would serialise them at."""
    kernel, _ = _built((160, 384, 256), "float16", "float16", dict(persistent=3))
    ptx = kernel.ptx
    body = ptx[ptx.index("wgmma.fence") :]
    products = [m.start() for m in re.finditer(r"wgmma\.mma_async", body)]
    # one version of the loop holds the products, the other none; LLVM unrolls the loop's
    # 256 / 64 steps in full (since the descriptors are the buffer's plus an offset)
    assert len(products) == 4 * (256 // 64)
    for step in range(0, len(products), 4):  # a step's 4 products: no branch between them
        assert not re.search(r"\bbra", body[products[step] : products[step + 3]])
    report = assemble(ptx)
    assert "serialized" not in report.log, report.log


def test_edge_blocks_keep_the_products_in_flight():
    """Where the edges cut the last block row and column, the stores are guarded: no product
    may then be in flight across a branch or a merge, nor may a conversion of the results
    be hoisted above the wait (each would make ptxas wait for every product)."""
    kernel, _ = _built((300, 520, 256), "float16", "float16", dict(block_cols=256, stages=4))
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0
    assert "serialized" not in report.log, report.log


def test_accumulators_that_leave_too_few_registers_are_refused():
    """Three consumer warpgroups of 64 x 256 accumulators beside a producer's: 512 threads
    leave 128 registers a thread, and a producer's registers handed over would not help:
    ptxas compiles each product under the entry's count."""
    a, b, c = example.gemm(192, 256, 128)
    s = example.schedule(a, b, c, tma=True, block_rows=192, block_cols=256, stages=2)
    with pytest.raises(sl.LoweringError, match="holds 128 registers .* 512 threads leaves 128"):
        sl.build(s, [a, b, c], target="cuda")


def test_two_maps_for_the_two_operands():
    kernel, _ = _built((256, 512, 256), "float16", "float32", dict(block_cols=256, stages=3))
    maps = kernel._compiled.plan.tensor_maps
    assert [(m.param, m.box, m.swizzle) for m in maps] == [(0, (64, 128), 128), (1, (64, 64), 128)]


def test_the_cpu_target_refuses_it():
    a = sl.placeholder((64, 64), "float16", name="A")
    b = sl.compute((64, 64), lambda i, j: a[i, j] * 2, name="B")
    s = sl.create_schedule(b.op)
    staged = s.cache_read(a, "shared", [b])
    outer, _ = s[b].split(b.op.axis[1], factor=16)
    s[staged].compute_at(s[b], outer)
    s[staged].pipeline(2, tma=True)
    with pytest.raises(sl.LoweringError, match=r"pipeline\(stages=2, tma=True\).*copy engine"):
        sl.build(s, [a, b], target="cpu")


def test_only_hopper_has_the_copy_engine():
    a, b, c = example.gemm(128, 128, 64)
    s = example.schedule(a, b, c, tma=True, block_cols=64, stages=2)
    with pytest.raises(sl.LoweringError, match=r"sm_80"):
        sl.build(s, [a, b, c], target="cuda -arch=sm_80")


def test_tma_takes_a_bool():
    a, b, c = example.gemm(128, 128, 64)
    s = sl.create_schedule(c.op)
    staged = s.cache_read(a, "shared", [c])
    with pytest.raises(FactorError, match="tma must be True or False, got 1"):
        s[staged].pipeline(3, tma=1)
    s[staged].pipeline(3, tma=True)
    assert "pipeline(stages=3, tma=True)" in s.describe()


def _copy_schedule(
    n: int, tile: tuple[int, int], value, align: bool = False, staged=None, dtype="float16"
):
    """A copy of A through a shared tile staged per step of a loop, pipelined with tma;
    `staged` makes the tile's stage from A (by default a cache of A)."""
    a = sl.placeholder((n, n), dtype, name="A")
    t = None if staged is None else sl.compute((n, n), lambda i, j: staged(a, i, j), name="T")
    b = sl.compute((n, n), lambda i, j: value(a if t is None else t, i, j), name="B")
    s = sl.create_schedule(b.op)
    if t is None:
        staged = s.cache_read(a, "shared", [b])
    else:
        staged = t
        s[t].set_scope("shared")
    i, j = b.op.axis
    bi, ii = s[b].split(i, factor=tile[0])
    bj, jj = s[b].split(j, factor=tile[1])
    s[b].reorder(bi, bj, ii, jj)
    s[b].bind(bi, sl.thread_axis("blockIdx.x"))
    s[b].bind(ii, sl.thread_axis("threadIdx.x"))
    s[staged].compute_at(s[b], bj)
    if align:
        s[staged].storage_align(s[staged].op.axis[0], 16, 8)
    s[staged].pipeline(2, tma=True)
    return s, [a, b]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_copy_staged_per_step(dtype):
    """Not only tensor cores: any kernel's staged tiles (here float32 too, rows of 64 bytes)."""
    s, args = _copy_schedule(64, (32, 16), lambda a, i, j: a[i, j] * 2, dtype=dtype)
    kernel = sl.build(s, args, target="cuda")
    x = np.random.default_rng(1).uniform(1, 2, (64, 64)).astype(dtype)
    y = np.full((64, 64), np.nan, dtype)
    kernel.simulate(x, y)
    np.testing.assert_array_equal(y, x * 2)
    assert "cp.async.bulk.tensor.2d" in kernel.ptx


def test_a_box_over_256_elements_is_refused():
    s, args = _copy_schedule(1024, (1, 512), lambda a, i, j: a[i, j])
    with pytest.raises(sl.LoweringError, match=r"box \[1, 512\] has a dimension over 256"):
        sl.lower(s, args)


def test_rows_under_16_bytes_are_refused():
    s, args = _copy_schedule(64, (32, 4), lambda a, i, j: a[i, j])
    with pytest.raises(sl.LoweringError, match="rows are 8 bytes.*multiple of 16 bytes"):
        sl.lower(s, args)


def test_padded_rows_are_refused():
    s, args = _copy_schedule(64, (32, 16), lambda a, i, j: a[i, j], align=True)
    with pytest.raises(sl.LoweringError, match="storage_align's padding; swizzle the tile"):
        sl.lower(s, args)


def test_a_transposed_fill_is_refused():
    s, args = _copy_schedule(
        64, (32, 16), lambda t, i, j: t[i, j] + 1, staged=lambda a, i, j: a[j, i]
    )
    with pytest.raises(sl.LoweringError, match="at one offset from where it writes"):
        sl.lower(s, args)


def test_zeros_inside_the_tensor_are_refused():
    s, args = _copy_schedule(
        64,
        (32, 16),
        lambda t, i, j: t[i, j] + 1,
        staged=lambda a, i, j: sl.if_then_else(j < 60, a[i, j], sl.const(0, "float16")),
    )
    with pytest.raises(sl.LoweringError, match="pads with zeros where the copy engine would not"):
        sl.lower(s, args)


def test_arithmetic_in_the_fill_is_refused():
    s, args = _copy_schedule(
        64, (32, 16), lambda t, i, j: t[i, j] + 1, staged=lambda a, i, j: a[i, j] * 2
    )
    with pytest.raises(sl.LoweringError, match="copy an element of a tensor in global memory"):
        sl.lower(s, args)


CONV_CASES = [
    # (height, width, batch, in, out), output, schedule options: the padding is the copy
    # engine's zero fill of rows of the image outside it
    ((4, 4, 128, 128, 128), "float16", {}),
    ((5, 3, 64, 64, 64), "float32", dict(block_rows=64, block_cols=64, stages=2)),
    # blocks take runs of 2 columns in turn: the box proven over the loops around the fill
    ((3, 4, 128, 64, 128), "float16", dict(block_cols=64, stages=3, runs=2)),
    # 4 persistent blocks take the 24 tiles (row, column, image block, channel block) in turn:
    # the box proven over the tile indices the code generator recovers by division
    ((2, 3, 256, 64, 128), "float16", dict(block_cols=64, stages=3, persistent=4)),
    ((5, 3, 64, 64, 64), "float32", dict(block_rows=64, block_cols=64, stages=2, persistent=4)),
]


def _conv(shape, out, options, seed):
    return wgmma_conv(shape, out, dict(options, tma=True), seed)


@pytest.mark.parametrize(("shape", "out", "options"), CONV_CASES[1:])  # the small one
def test_a_padded_convolution_simulated(shape, out, options):
    kernel, (a, w, c), (x, y, z) = _conv(shape, out, options, seed=2)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, w: y}), out)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "dtype", "out", "options"), CASES)
def test_on_the_gpu(shape, dtype, out, options):
    _runs_right(_built, shape, dtype, out, options)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(
    ("shape", "options"),
    [((1024, 768, 512), dict(block_cols=256, stages=4)), ((1000, 1000, 320), dict(stages=4))],
)
def test_on_the_gpu_at_a_size_of_many_blocks(shape, options):
    kernel, (a, b, c) = _built(shape, "float16", "float32", options)
    x, y, z = _inputs(*shape, "float16", "float32", seed=11)
    kernel(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), "float32")


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("n", "dtype"), [(64, "float16"), (200, "float32")])
def test_a_copy_staged_per_step_on_the_gpu(n, dtype):
    s, args = _copy_schedule(n, (32, 16), lambda a, i, j: a[i, j] * 2, dtype=dtype)
    kernel = sl.build(s, args, target="cuda")
    x = np.random.default_rng(2).uniform(1, 2, (n, n)).astype(dtype)
    y = np.full((n, n), np.nan, dtype)
    kernel(x, y)
    np.testing.assert_array_equal(y, x * 2)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "out", "options"), CONV_CASES)
def test_a_padded_convolution_on_the_gpu(shape, out, options):
    kernel, (a, w, c), (x, y, z) = _conv(shape, out, options, seed=4)
    kernel(x, y, z)
    _close(z, sl.reference(c, {a: x, w: y}), out)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_rows_the_copy_engine_cannot_read_are_a_launch_error():
    n = sl.var("n")
    a, b, c = example.gemm(128, n, 128)  # n: the length of B's rows
    s = example.schedule(a, b, c, tma=True, block_cols=64, stages=2)
    kernel = sl.build(s, [a, b, c], target="cuda")
    x, y, z = _inputs(128, 100, 128, "float16", "float32")
    with pytest.raises(sl.LaunchError, match="rows of 200 bytes; pad its last dimension"):
        kernel(x, y, z)


def test_the_first_thread_issues_the_copies_without_a_producer_warp():
    """``warp_specialize=False``: the block keeps its two warpgroups, its first thread refills
    each step's stage before its own products, each warp releases the stage at the step's end;
    simulated against the reference."""
    a, b, c = example.gemm(256, 256, 320)
    s = example.schedule(a, b, c, block_cols=128, stages=3, tma=True, warp_specialize=False)
    kernel = sl.build(s, [a, b, c], target="cuda")
    text = str(kernel.lowered)
    assert "producer" not in text and ".maxntid 32, 4, 2" in kernel.ptx
    assert "mbarrier_arrive(A.shared.empty[k.outer % 3], once a warp)" in text
    x, y, z = _inputs(256, 256, 320, "float16", "float32", seed=3)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), "float32")
    report = assemble(kernel.ptx)
    assert "serialized" not in report.log, report.log
    # a warp releases the stage after its products are done: the next copy may land on it
    assert not releases_in_flight(kernel.ptx)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_tensors_take_the_usual_call_with_their_maps_kept(monkeypatch):
    """A kernel of bulk copies takes the usual call with torch tensors: its tensor maps are
    encoded once per set of addresses and sizes, and a call on other tensors gets theirs."""
    import torch

    from schedlang.runtime import usual_calls

    encoded = []
    real = usual_calls.encode
    monkeypatch.setattr(usual_calls, "encode", lambda *a: encoded.append(a) or real(*a))
    kernel, (a, b, c) = _built((256, 256, 128), "float16", "float32", dict(stages=2))
    sets = []
    for seed in (1, 2):
        x, y, z = _inputs(256, 256, 128, "float16", "float32", seed=seed)
        sets.append([torch.from_numpy(t).cuda() for t in (x, y, z)])
    for _ in range(3):
        for x, y, z in sets:
            kernel(x, y, z)
    torch.cuda.synchronize()
    assert kernel._usual is not None and len(encoded) == 2
    for x, y, z in sets:
        want = sl.reference(c, {a: x.cpu().numpy(), b: y.cpu().numpy()})
        _close(z.cpu().numpy(), want, "float32")
