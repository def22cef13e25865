"""TE's other warp-matrix tiles, the taller m32n8k16 (A 32 x 16, B 16 x 8, the accumulator
32 x 8) and the wider m8n32k16 (A 8 x 16, B 16 x 32, the accumulator 8 x 32), in a batched GEMM
laid out in tiles, as TE's tensor-core tests write it: simulated on the CPU with the fragment
layouts, assembled by ptxas, and run on a GPU where there is one.

Inputs are random (never zeros), outputs poisoned with NaN, results compared with the numpy
reference of the unscheduled algorithm.
"""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.loopir.memory import fragments

from .ptxas import assemble

TALL, WIDE = (32, 8), (8, 32)  # (rows, columns) of the accumulator's tiles


def tiled_batch_matmul(batch: int, n: int, m: int, l: int, tile=TALL):
    """``C[b] = A[b] @ B[b]`` with A, B and C stored as grids of rows x 16, 16 x columns and
    rows x columns tiles (TE's ``test_tensor_core_batch_matmal`` layout)."""
    rows, cols = tile
    a = sl.placeholder((batch, n // rows, l // 16, rows, 16), "float16", name="A")
    b = sl.placeholder((batch, l // 16, m // cols, 16, cols), "float16", name="B")
    k1 = sl.reduce_axis((0, l // 16), name="k1")
    k2 = sl.reduce_axis((0, 16), name="k2")
    c = sl.compute(
        (batch, n // rows, m // cols, rows, cols),
        lambda z, i, j, ii, jj: sl.sum(
            a[z, i, k1, ii, k2].astype("float32") * b[z, k1, j, k2, jj].astype("float32"),
            axis=[k1, k2],
        ),
        name="C",
    )
    return a, b, c


def schedule(a, b, c, row_warps: int = 2, col_warps: int = 2, col_tiles: int = 2):
    """TE's schedule of that test: a block of row_warps x col_warps warps, each computing
    `col_tiles` tiles of a row; A and B staged in shared memory per k tile."""
    rows, cols = (int(n) for n in c.shape[-2:])
    s = sl.create_schedule(c.op)
    a_shared, b_shared = s.cache_read(a, "shared", [c]), s.cache_read(b, "shared", [c])
    a_frag = s.cache_read(a_shared, "wmma.matrix_a", [c])
    b_frag = s.cache_read(b_shared, "wmma.matrix_b", [c])
    c_frag = s.cache_write(c, "wmma.accumulator")
    z, i, j, tile_i, tile_j = s[c].op.axis
    block_i, i = s[c].split(i, factor=row_warps)
    j, jj = s[c].split(j, factor=col_tiles)
    block_j, j = s[c].split(j, factor=col_warps)
    s[c].reorder(block_i, block_j, i, j, jj, tile_i, tile_j)
    for loop, tag in ((z, "blockIdx.z"), (block_i, "blockIdx.x"), (block_j, "blockIdx.y")):
        s[c].bind(loop, sl.thread_axis(tag))
    s[c].bind(i, sl.thread_axis("threadIdx.y"))
    s[c].bind(j, sl.thread_axis("threadIdx.z"))
    s[c_frag].compute_at(s[c], j)
    _, warp_i, warp_j, frag_i, frag_j = s[c_frag].op.axis
    k, frag_k = c_frag.op.reduce_axis
    s[c_frag].reorder(k, warp_i, warp_j, frag_i, frag_j, frag_k)
    s[a_frag].compute_at(s[c_frag], k)
    s[b_frag].compute_at(s[c_frag], k)
    for shared in (a_shared, b_shared):
        s[shared].compute_at(s[c_frag], k)
        _, xo, yo, xi, yi = shared.op.axis
        ty, xo = s[shared].split(xo, nparts=row_warps)
        tz, yo = s[shared].split(yo, nparts=col_warps)
        tx, _ = s[shared].split(s[shared].fuse(xi, yi), nparts=32)
        for loop, tag in ((ty, "threadIdx.y"), (tz, "threadIdx.z"), (tx, "threadIdx.x")):
            s[shared].bind(loop, sl.thread_axis(tag))
    s[a_frag].tensorize(a_frag.op.axis[-2], sl.intrin.load_matrix("wmma.matrix_a", m=rows))
    s[b_frag].tensorize(b_frag.op.axis[-2], sl.intrin.load_matrix("wmma.matrix_b", n=cols))
    s[c_frag].tensorize(frag_i, sl.intrin.mma_sync(n=cols, m=rows))
    s[c].tensorize(tile_i, sl.intrin.store_matrix(n=cols, m=rows))
    return s


def _inputs(a, b, c, seed):
    rng = np.random.default_rng(seed)

    def data(t):
        shape = [int(d) for d in t.shape]
        sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return (rng.uniform(0.5, 2.0, shape) * sign).astype(np.float16)

    return data(a), data(b), np.full([int(d) for d in c.shape], np.nan, np.float32)


def _check(got, want):
    assert not np.isnan(got).any(), "some outputs were never written"
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


# (batch, n, m, l, tile): an odd batch; tile counts that the warps do not divide (3 rows of
# tiles over 2 warps, 5 columns over 2 x 2)
SIZES = [
    (3, 64, 32, 48, TALL),
    (5, 96, 40, 32, TALL),
    (1, 32, 8, 16, TALL),
    (3, 24, 96, 48, WIDE),
    (5, 40, 160, 32, WIDE),
]


@pytest.mark.parametrize("size", SIZES)
def test_simulated_with_the_fragment_layouts(size):
    a, b, c = tiled_batch_matmul(*size)
    kernel = sl.build(schedule(a, b, c), [a, b, c], target="cuda")
    x, y, z = _inputs(a, b, c, seed=sum(size[:4]))
    kernel.simulate(x, y, z)
    _check(z, sl.reference(c, {a: x, b: y}))


@pytest.mark.parametrize(
    ("tile", "products", "loads"),
    [
        # per warp and k tile: 2 tiles x 2 row halves; A's tile as two ldmatrix.x4 (one per 16
        # rows), each B 16 x 8 as an .x2, transposed
        (TALL, 4, {"x4.shared": 2, "x2.trans": 2}),
        # 2 tiles x 4 column blocks; A 8 x 16 as an .x2, each B 16 x 32 as two .x4, transposed
        (WIDE, 8, {"x2.shared": 1, "x4.trans": 4}),
    ],
)
def test_ptx_is_m16n8k16_products_with_ldmatrix_loads(tile, products, loads):
    a, b, c = tiled_batch_matmul(3, 64, 64, 16, tile)  # one k tile
    kernel = sl.build(schedule(a, b, c), [a, b, c], target="cuda")
    lines = kernel.ptx.splitlines()
    found = [line for line in lines if "mma.sync.aligned" in line]
    assert found and all("m16n8k16.row.col.f32.f16.f16.f32" in p for p in found)
    assert len(found) == products
    for kind, count in loads.items():
        name = f"ldmatrix.sync.aligned.m8n8.{kind}"
        assert sum(name in line for line in lines) == count, kind
    report = assemble(kernel.ptx)
    assert report.stack_bytes == 0, report.log


@pytest.mark.parametrize(
    ("scope", "shape"), [("wmma.matrix_a", (32, 16)), ("wmma.accumulator", (32, 8))]
)
def test_a_32_row_tile_is_the_16_row_layout_twice(scope, shape):
    """Each element held once; rows 16 to 31 in the slots after rows 0 to 15, lane for lane."""
    held = fragments.layout(scope, shape)
    cells = [cell for lane in held for cell in lane]
    assert sorted(cells) == [(r, col) for r in range(shape[0]) for col in range(shape[1])]
    half = fragments.layout(scope, (16, shape[1]))
    for lane, top in zip(held, half):
        assert lane == top + tuple((r + 16, col) for r, col in top)


def test_an_8_row_tile_is_the_top_of_the_16_row_layout():
    """Each element held once, by the lane and in the order of the 16-row tile's slots."""
    for scope, shape, full in (
        ("wmma.matrix_a", (8, 16), (16, 16)),
        ("wmma.accumulator", (8, 32), None),
    ):
        held = fragments.layout(scope, shape)
        cells = [cell for lane in held for cell in lane]
        assert sorted(cells) == [(r, col) for r in range(8) for col in range(shape[1])]
        whole = fragments.layout(scope, full) if full else fragments.warp_slice(32)
        for lane, top in zip(held, whole):
            assert lane == tuple(cell for cell in top if cell[0] < 8)


def test_the_intrinsics_take_the_shapes_of_te_tiles_only():
    assert sl.intrin.mma_sync(n=8, m=32).shape == (32, 8, 16)
    assert sl.intrin.load_matrix("wmma.matrix_a", m=32).shape == (32, 16)
    assert sl.intrin.load_matrix("wmma.accumulator", n=8, m=32).shape == (32, 8)
    assert sl.intrin.store_matrix(n=8, m=32).shape == (32, 8)
    assert sl.intrin.mma_sync(n=32, m=8).shape == (8, 32, 16)
    assert sl.intrin.load_matrix("wmma.matrix_a", m=8).shape == (8, 16)
    assert sl.intrin.load_matrix("wmma.matrix_b", n=32).shape == (16, 32)
    assert sl.intrin.store_matrix(n=32, m=8).shape == (8, 32)
    with pytest.raises(ValueError, match=r"m=32 is the m32n8k16 tile: n=8, not n=16"):
        sl.intrin.mma_sync(m=32)
    with pytest.raises(ValueError, match=r"m=8 is the m8n32k16 tile: n=32, not n=8"):
        sl.intrin.store_matrix(n=8, m=8)
    with pytest.raises(ValueError, match=r"n must be 8 or 16 for 16 rows .*or 32 with m=8"):
        sl.intrin.mma_sync(n=32)
    with pytest.raises(ValueError, match=r"m=32 is a tile of 16-bit operands; tf32 tiles"):
        sl.intrin.mma_sync(n=8, m=32, tf32=True)
    with pytest.raises(ValueError, match=r"m is the rows of A and of the accumulator; B of"):
        sl.intrin.load_matrix("wmma.matrix_b", n=8, m=32)
    with pytest.raises(ValueError, match="m must be 16, or 32 or 8 .TE's m32n8k16 and m8n32k16"):
        sl.intrin.load_matrix("wmma.matrix_a", m=64)
    with pytest.raises(ValueError, match="m must be 16, 32 or 8 .a warp's tile. or 64"):
        sl.intrin.store_matrix(n=8, m=48)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize(
    "size", [(3, 256, 136, 128, TALL), (4, 512, 512, 512, TALL), (3, 136, 256, 128, WIDE)]
)
def test_on_the_gpu(size):
    a, b, c = tiled_batch_matmul(*size)
    kernel = sl.build(schedule(a, b, c), [a, b, c], target="cuda")
    x, y, z = _inputs(a, b, c, seed=7)
    kernel(x, y, z)
    _check(z, sl.reference(c, {a: x, b: y}))
