"""A warpgroup's tile stored by the copy engine through shared memory
(``store_matrix(n, m=64, tma=True)``): the kernel's pieces, staging buffers and waits, the PTX
assembled by ptxas for sm_90a, the results on a Hopper GPU where there is one (and simulated on
the CPU, where the store is the same), and every way such a store is refused.

The kernels are `examples/gpu_gemm_wgmma.py`'s and `examples/gpu_conv2d_wgmma.py`'s with
``tma_store=True``. Inputs are random (never zeros), outputs poisoned with NaN; results are
compared with the numpy reference of the unscheduled algorithm.
"""

from __future__ import annotations

import re

import pytest

import schedlang as sl
from examples import gpu_gemm_wgmma as example
from schedlang.codegen.nvptx.plan import plan_kernels, shared_bytes
from schedlang.loopir.core.nodes import (
    Allocate,
    Barrier,
    Buffer,
    BulkStore,
    BulkWait,
    For,
    MatrixOp,
    Store,
    Tile,
    seq,
)
from schedlang.loopir.core.visit import walk_stmt
from schedlang.loopir.memory.bulk_store import bulk_stores
from schedlang.schedule.errors import TensorizeError

from .ptxas import assemble
from .test_tensor_cores import _close, _inputs, _runs_right
from .test_wgmma import _built as wgmma_built
from .test_wgmma import _conv as wgmma_conv

CASES = [
    # (m, n, k), operands, output, schedule options
    ((128, 128, 128), "float16", "float16", dict(tma=True, block_cols=64, stages=2)),
    ((128, 256, 192), "bfloat16", "bfloat16", dict(tma=True, block_cols=256, stages=4)),
    # float32 results: pieces of 32 columns
    ((256, 256, 256), "float16", "float32", dict(tma=True, block_rows=256, stages=4)),
    # the edges cut tiles: the copy engine writes only what lies inside C
    ((200, 136, 128), "float16", "float32", dict(tma=True, block_cols=64, stages=3)),
    ((130, 296, 64), "bfloat16", "bfloat16", dict(tma=True, block_cols=128, stages=2)),
    # persistent blocks: each tile's pieces stored while the next tile's products run
    ((256, 384, 128), "float16", "float16", dict(tma=True, persistent=4, stages=3)),
    ((160, 256, 208), "float16", "float16", dict(tma=True, persistent=2, stages=3)),
    # copies by cp.async from every thread (no producer): the same store
    ((192, 256, 128), "float16", "float16", dict(block_rows=192, block_cols=128, stages=2)),
]


def _built(shape, dtype, out, options):
    return wgmma_built(shape, dtype, out, dict(options, tma_store=True))


def _kernel_body(shape, dtype, out, options):
    a, b, c = example.gemm(*shape, dtype, out)
    s = example.schedule(a, b, c, **dict(options, tma_store=True))
    return plan_kernels(sl.lower(s, [a, b, c])).kernels[0].body


@pytest.mark.parametrize(("shape", "dtype", "out", "options"), CASES)
def test_simulated(shape, dtype, out, options):
    kernel, (a, b, c) = _built(shape, dtype, out, options)
    x, y, z = _inputs(*shape, dtype, out)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, b: y}), out)


def test_the_pieces_of_a_tile():
    """A 64 x 256 float16 tile in 4 pieces of 128-byte rows, through two staging buffers a
    warpgroup; each piece waits for the reads of the one two before; the block's end waits
    for the last stores, after its loop over tiles (none of them waits for its own)."""
    body = _kernel_body((256, 512, 128), "float16", "float16", dict(example.FAST, persistent=2))
    text = str(body)
    stores = [s for s in walk_stmt(body) if isinstance(s, BulkStore)]
    assert len(stores) == 4
    assert all(s.shape == (64, 64) and s.dst.name == "C" for s in stores)
    assert "allocate store.staging: float16[2, 2, 64, 64] in shared, swizzled 128" in text
    waits = [(s.pending, s.read) for s in walk_stmt(body) if isinstance(s, BulkWait)]
    assert waits == [(0, True), (1, True), (1, True), (1, True), (0, False)]
    assert text.count("barrier(warpgroup)") == 8
    tiles = text.index("for i.outer.j.outer.fused.inner")
    assert text.index("bulk_wait(stores, pending=0)") > text.index("bulk_store", tiles)
    assert "store_matrix(acc[0:+64, 192:+64])" in text


def test_float32_results_take_pieces_of_32_columns():
    body = _kernel_body((128, 128, 64), "float16", "float32", dict(tma=True, stages=2))
    stores = [s for s in walk_stmt(body) if isinstance(s, BulkStore)]
    assert [s.shape for s in stores] == [(64, 32)] * 4


def test_one_staging_buffer_where_two_do_not_fit():
    """256 x 128 blocks at 4 stages take 192 KB: four warpgroups' two buffers would not fit,
    one each does, and then every piece waits for the last one's reads."""
    options = dict(tma=True, block_rows=256, stages=4)
    text = str(_kernel_body((256, 256, 256), "float16", "float16", options))
    assert "store.staging: float16[4, 1, 64, 64]" in text
    assert "bulk_wait(reads, pending=1)" not in text


def test_the_ptx_stores_by_the_copy_engine():
    kernel, _ = _built((256, 512, 128), "float16", "float16", dict(example.FAST, persistent=2))
    ptx = kernel.ptx
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta", ptx)) == 4
    assert "st.global" not in ptx  # nothing stored from the registers
    assert re.search(r"bar\.sync\s+%r\d+, 128;", ptx)
    assert "cp.async.bulk.wait_group.read 1;" in ptx and "cp.async.bulk.wait_group 0;" in ptx
    report = assemble(ptx)
    assert "serialized" not in report.log, report.log


def test_a_convolution_stores_by_the_copy_engine():
    shape, options = (2, 3, 256, 64, 128), dict(tma=True, block_cols=64, stages=3, persistent=4)
    kernel, (a, w, c), (x, y, z) = wgmma_conv(shape, "float16", dict(options, tma_store=True), 3)
    assert re.search(r"cp\.async\.bulk\.tensor\.4d\.global\.shared::cta", kernel.ptx)
    kernel.simulate(x, y, z)
    _close(z, sl.reference(c, {a: x, w: y}), "float16")
    assemble(kernel.ptx)


def test_the_store_must_be_a_warpgroups():
    with pytest.raises(ValueError, match="tma=True stores a warpgroup's tile"):
        sl.intrin.store_matrix(n=16, tma=True)
    with pytest.raises(ValueError, match="tma must be True or False"):
        sl.intrin.store_matrix(n=64, m=64, tma=1)
    stored = sl.intrin.store_matrix(n=64, m=64, tma=True)
    assert repr(stored) == "sl.intrin.store_matrix(n=64, m=64, tma=True)" and stored.tma


def test_a_store_to_shared_memory_is_refused():
    a, b, c = example.gemm(64, 64, 64)
    s = sl.create_schedule(c.op)
    staged = s.cache_write(c, "shared")
    s.cache_write(staged, "wgmma.accumulator")
    s[staged].tensorize(s[staged].op.axis[0], sl.intrin.store_matrix(n=64, m=64, tma=True))
    with pytest.raises(TensorizeError, match="'C.shared' is in shared memory; use store_matrix"):
        sl.lower(s, [a, b, c])


def test_columns_that_are_not_whole_pieces_are_refused():
    a, b, c = example.gemm(128, 40, 64, "float16", "float16")
    s = example.schedule(a, b, c, block_cols=40, stages=2, tma_store=True)
    with pytest.raises(sl.LoweringError, match="pieces of 64 x 64"):
        sl.build(s, [a, b, c], target="cuda")


def _crowded(loop: bool, kb: int = 190):
    """The GEMM's kernel (32 KB of tiles) beside `kb` KB more of shared memory, read after
    its stores; with `loop`, all of it run again by a serial loop (as a persistent block's
    tiles)."""
    a, b, c = example.gemm(128, 128, 64, "float16", "float16")
    lowered = sl.lower(example.schedule(a, b, c, stages=2, tma_store=True), [a, b, c])
    big = Buffer("big", (sl.const(kb * 1024, "int64"),), "uint8", "shared")
    body = seq(lowered.body, Store(big, (sl.const(0, "int64"),), sl.const(1, "uint8")))
    if loop:
        tile = sl.Var("tile", "int32", "axis")
        body = For(tile, sl.const(0, "int32"), sl.const(2, "int32"), "serial", body)
    return Allocate(big, body)


def test_too_little_shared_memory_is_refused():
    """No room for one staging buffer a warpgroup (222 KB taken), and no region free by the
    time of the stores: every buffer is used again in the loop's next turn."""
    kernel = _crowded(loop=True)
    with pytest.raises(sl.LoweringError, match=r"other buffers take 22\d KB of the 227"):
        bulk_stores(kernel, shared_bytes(kernel), (32, 4, 2))


def test_the_staging_takes_the_region_of_tiles_read_for_the_last_time():
    """Without the loop, the GEMM's tiles of A and B are read for the last time before the
    stores: the staging takes the largest one's region, and a block barrier precedes the
    first piece. Where the other buffers alone exceed the block's shared memory, no reuse
    makes room."""
    kernel = _crowded(loop=False)
    made, reused = bulk_stores(kernel, shared_bytes(kernel), (32, 4, 2))
    staging, region = reused
    assert staging.name == "store.staging" and region.name in ("A.shared", "B.shared")
    stores = sum(isinstance(s, MatrixOp) and s.bulk for s in walk_stmt(kernel))
    assert stores and _block_barriers(made) == _block_barriers(kernel) + stores
    too_big = _crowded(loop=False, kb=200)
    with pytest.raises(sl.LoweringError, match=r"other buffers take 23\d KB of the 227"):
        bulk_stores(too_big, shared_bytes(too_big), (32, 4, 2))


def _block_barriers(kernel) -> int:
    return sum(isinstance(s, Barrier) and not s.warpgroup for s in walk_stmt(kernel))


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(("shape", "dtype", "out", "options"), CASES)
def test_on_the_gpu(shape, dtype, out, options):
    _runs_right(_built, shape, dtype, out, options)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(
    ("shape", "out", "options"),
    [
        ((2, 3, 256, 64, 128), "float16", dict(block_cols=64, stages=3, persistent=4)),
        ((5, 3, 64, 64, 64), "float32", dict(block_rows=64, block_cols=64, stages=2)),
        ((4, 4, 128, 128, 256), "float16", dict(block_cols=256, stages=4, persistent=3)),
    ],
)
def test_a_convolution_on_the_gpu(shape, out, options):
    options = dict(options, tma=True, tma_store=True)
    kernel, (a, w, c), (x, y, z) = wgmma_conv(shape, out, options, seed=8)
    kernel(x, y, z)
    _close(z, sl.reference(c, {a: x, w: y}), out)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_rows_the_copy_engine_cannot_write_are_a_launch_error():
    """C's rows of 300 bfloat16 are 600 bytes: the copy engine writes rows of multiples of 16
    (A and B, copied by threads, have no such need)."""
    n = sl.var("n")
    a, b, c = example.gemm(128, n, 64, "bfloat16", "bfloat16")
    s = example.schedule(a, b, c, block_cols=128, stages=2, tma_store=True)
    kernel = sl.build(s, [a, b, c], target="cuda")
    x, y, z = _inputs(128, 300, 64, "bfloat16", "bfloat16")
    with pytest.raises(sl.LaunchError, match=r"'C' is written by the copy engine \(store_matrix"):
        kernel(x, y, z)


def _bulk_store(name: str, shape: tuple[int, ...], dtype: str) -> MatrixOp:
    """A warpgroup's 64 x 64 store marked for the copy engine, into the last two dimensions of
    a new tensor of `shape`."""
    zero = sl.const(0, "int64")
    acc = Buffer("acc", (sl.const(64, "int64"),) * 2, "float32", "wgmma.accumulator")
    dst = Buffer(name, tuple(sl.const(n, "int64") for n in shape), dtype)
    nd = len(shape)
    tile = Tile(dst, (zero,) * nd, (nd - 2, nd - 1), (64, 64))
    return MatrixOp("store", tile, (Tile(acc, (zero, zero), (0, 1), (64, 64)),), bulk=True)


def test_stores_of_two_dtypes_in_one_kernel_are_refused():
    kernel = seq(_bulk_store("C", (64, 64), "float16"), _bulk_store("D", (64, 64), "float32"))
    with pytest.raises(sl.LoweringError, match="one dtype per kernel, but this one stores"):
        bulk_stores(kernel, 0, (32, 4, 1))


def test_a_tensor_of_six_dimensions_is_refused():
    with pytest.raises(sl.LoweringError, match="tensors of 1-5 dimensions, and it has 6"):
        bulk_stores(_bulk_store("C", (2, 2, 2, 2, 64, 64), "float16"), 0, (32, 4, 1))
