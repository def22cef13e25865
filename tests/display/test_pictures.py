"""Pictures: tile maps, cache footprints and rooflines hold the right data."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import schedlang as sl
from schedlang.display.ceilings import Ceilings
from schedlang.display.pictures import ROW, distinct_colours
from schedlang.display.tiles import tile_map

from .algorithms import cpu_tiled, gpu_shared, matmul

pytest.importorskip("matplotlib", reason="pictures need matplotlib (the test extra has it)")
from matplotlib.colors import to_rgb  # noqa: E402


def _image(fig) -> np.ndarray:
    return np.ma.filled(fig.axes[0].images[0].get_array(), -1)


def test_tile_map_of_a_cuda_kernel_built_without_a_gpu():
    a, b, c = matmul()
    s, _, _ = gpu_shared(a, b, c)
    kernel = sl.build(s, [a, b, c], target="cuda")
    fig = sl.plot_tiles(kernel, c, M=40, N=24, K=20)
    i, j = np.indices((40, 24))
    # blocks of 16 x 16, numbered x fastest: blockIdx.x runs over columns, 2 of them
    np.testing.assert_array_equal(_image(fig), j // 16 + 2 * (i // 16))
    tiles = tile_map(kernel, "C", {"M": 40, "N": 24, "K": 20})
    np.testing.assert_array_equal(tiles.threads[..., 0], j % 16)
    np.testing.assert_array_equal(tiles.threads[..., 1], i % 16)
    assert tiles.block_kind == "block"


def test_tile_map_of_a_cpu_kernel_colours_parallel_tasks():
    a, b, c = matmul()
    lowered = sl.lower(cpu_tiled(c, tile=8), [a, b, c])
    fig = sl.plot_tiles(lowered, c, M=20, N=12, K=4)
    i, _ = np.indices((20, 12))
    np.testing.assert_array_equal(_image(fig), i // 8)
    assert "parallel task, 3 in all" in fig.axes[0].get_title()


def test_tile_map_names_unknown_tensors():
    a, b, c = matmul()
    with pytest.raises(ValueError, match="'D' is not an argument of 'main'"):
        sl.plot_tiles(sl.lower(sl.create_schedule(c), [a, b, c]), "D", M=4, N=4, K=4)


def test_footprint_of_a_shared_stage_is_the_blocks_tile():
    a, b, c = matmul()
    s, aa, bb = gpu_shared(a, b, c)
    fig = sl.plot_footprint(s, aa, M=40, N=40, K=40, at={"i.outer": 1, "k.outer": 2})
    expected = np.zeros((40, 40), np.int8)
    expected[16:32, 32:40] = 1  # rows of block 1, columns of k step 2 (the tail: 8 left)
    np.testing.assert_array_equal(_image(fig), expected)
    assert "(all values of i.inner, j.inner" in fig.axes[0].get_title()
    fig = sl.plot_footprint(s, "B.shared", M=40, N=40, K=40, at={"j.outer": 2})
    expected = np.zeros((40, 40), np.int8)
    expected[0:16, 32:40] = 1
    np.testing.assert_array_equal(_image(fig), expected)


def test_footprint_errors_name_the_loops_and_inputs():
    a, b, c = matmul()
    s, aa, _ = gpu_shared(a, b, c)
    with pytest.raises(ValueError, match="has no prefix loop ko"):
        sl.plot_footprint(s, aa, at={"ko": 1}, M=8, N=8, K=8)
    with pytest.raises(ValueError, match="'C.local' reads A.shared, B.shared; name the input"):
        sl.plot_footprint(s, "C.local", M=8, N=8, K=8)


def test_roofline_places_each_schedule_at_its_intensity():
    a, b, c = matmul()
    result = sl.compare(
        {"naive": sl.create_schedule(c), "tiled": cpu_tiled(c)},
        [a, b, c],
        sizes={"M": 16, "N": 16, "K": 16},
        repeat=1,
    )
    roofs = Ceilings("test device", flops=1e11, bandwidth=1e10, source="given")
    fig = sl.plot_roofline(result, ceilings=roofs)
    ax = fig.axes[0]
    points = [collection.get_offsets()[0] for collection in ax.collections]
    intensity = result.flops / result.bytes
    for point, row in zip(points, result.rows):
        assert point[0] == pytest.approx(intensity)
        assert point[1] == pytest.approx(result.flops / row.seconds / 1e9)
    roof = ax.lines[-1].get_ydata()
    assert roof.max() == pytest.approx(100.0)  # GFLOP/s
    bars = result.plot().axes[0].patches
    assert len(bars) == 2


def test_pictures_say_how_to_get_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    a, b, c = matmul()
    with pytest.raises(ImportError, match="pip install 'matplotlib>=3.8'"):
        sl.plot_tiles(sl.lower(sl.create_schedule(c), [a, b, c]), c, M=2, N=2, K=2)


def _vector_blocks(n: int, block: int):
    """B = 2 A over n elements, blocks of `block` threads (one element each), built for cuda."""
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
    s = sl.create_schedule(b)
    bx, tx = s[b].split(b.op.axis[0], factor=block)
    s[b].bind(bx, sl.thread_axis("blockIdx.x"))
    s[b].bind(tx, sl.thread_axis("threadIdx.x"))
    return sl.build(s, [a, b], target="cuda"), b


def test_a_long_vector_is_drawn_in_rows():
    kernel, b = _vector_blocks(200, 16)
    fig = sl.plot_tiles(kernel, b)
    image = _image(fig)
    rows = -(-200 // ROW)
    assert image.shape == (rows, ROW)
    expected = np.full(rows * ROW, -1)
    expected[:200] = np.arange(200) // 16
    np.testing.assert_array_equal(image.ravel(), expected)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(r * ROW) for r in range(rows)]
    assert ax.get_xlabel() == f"index within the row ({ROW} per row)"
    width, height = fig.get_size_inches()
    cell = (width - 1.5) / ROW  # inches per (square) cell: room for its thread's label
    assert cell >= 0.2 and height >= rows * cell and len(ax.texts) == 200


def test_a_short_vector_stays_one_row():
    kernel, b = _vector_blocks(12, 4)
    image = _image(sl.plot_tiles(kernel, b))
    np.testing.assert_array_equal(image, [np.arange(12) // 4])


@pytest.mark.parametrize("count", [5, 20, 24, 97])
def test_every_block_has_a_colour_of_its_own(count):
    colours = distinct_colours(count).colors
    rgb = np.array([to_rgb(c) for c in colours])
    assert len(rgb) == count and len({tuple(c) for c in rgb}) == count
    neighbours = np.abs(np.diff(rgb, axis=0)).sum(axis=1)
    assert neighbours.min() > 0.15  # blocks k and k + 1 are told apart at a glance


def test_a_plot_of_24_tasks_uses_24_colours():
    a, b, c = matmul()
    fig = sl.plot_tiles(sl.lower(cpu_tiled(c, tile=2), [a, b, c]), c, M=48, N=4, K=2)
    np.testing.assert_array_equal(_image(fig), np.indices((48, 4))[0] // 2)
    image = fig.axes[0].images[0]
    rgb = image.cmap(image.norm(np.arange(24)))
    assert len({tuple(c) for c in rgb}) == 24
