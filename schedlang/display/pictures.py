"""Pictures of schedules with matplotlib: tile maps, cache footprints, rooflines.

matplotlib is optional: it is imported when a picture is drawn, and its absence is an
ImportError that says how to install it. Figures are made with `matplotlib.figure.Figure`,
not pyplot, so that no global figure list holds them and a notebook shows each once (as the
value the function returns).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..schedule.schedule import Schedule
from .sizes import bind_sizes
from .tiles import UNWRITTEN, tile_map

ANNOTATE_LIMIT = 256  # elements up to which each cell of a tile map is labelled
ROW = 32  # elements per row of a 1-d tile map: cells wide enough for a label


def figure(**kwargs):
    """A new matplotlib Figure (matplotlib imported now, with a clear error if absent)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "schedlang's pictures need matplotlib: pip install 'matplotlib>=3.8' "
            "(or pip install 'schedlang[notebooks]')"
        ) from error
    return Figure(**kwargs)


def plot_tiles(kernel_or_lowered: object, tensor: object, **sizes: int):
    """Which block (colour) and which thread (label) write each element of `tensor`.

    Runs `kernel_or_lowered` (a kernel from `sl.build` or a `LoweredFunc`) in the loop-IR
    interpreter at `sizes` (``M=64, N=64``; a size no argument shows must be given) and
    records the hardware indices around each store (`display.tiles`). On a CPU the colours are
    the iterations of parallel loops. Cells are labelled with the thread's ``x,y`` when the
    tensor has at most `ANNOTATE_LIMIT` elements. For 1-d and 2-d tensors: a 1-d tensor longer
    than `ROW` is drawn in rows of `ROW` elements (as text wraps; a row's label is the index it
    starts at), since one row of hundreds of cells is a strip too thin to read. Each block has
    a colour of its own, however many there are. Returns the Figure, whose image holds the
    block number of each element (masked where nothing writes, and after a 1-d tensor's end).
    """
    tiles = tile_map(kernel_or_lowered, tensor, sizes)
    ids = tiles.block_ids
    threads = tiles.threads
    width = None
    if ids.ndim == 1 and ids.size > ROW:
        width = ROW
        ids, threads = _wrapped(ids, width), _wrapped(threads, width)
    ids = _as_2d(ids, tiles.tensor, "plot_tiles")
    threads = threads.reshape(ids.shape + (3,))
    count = int(ids.max(initial=UNWRITTEN)) + 1
    fig = figure(figsize=_size(ids.shape))
    ax = fig.add_subplot()
    ax.imshow(
        np.ma.masked_equal(ids, UNWRITTEN),
        cmap=distinct_colours(max(count, 1)),
        vmin=-0.5,
        vmax=max(count, 1) - 0.5,
        interpolation="nearest",
    )
    if ids.size <= ANNOTATE_LIMIT and tiles.block_kind == "block":
        uses_y = bool((threads[..., 1] > 0).any() or (threads[..., 2] > 0).any())
        for (row, col), tid in np.ndenumerate(ids):
            if tid == UNWRITTEN:
                continue
            t = threads[row, col]
            label = f"{t[0]},{t[1]}" if uses_y else f"{t[0]}"
            ax.text(col, row, label, ha="center", va="center", fontsize=6)
    what = tiles.block_kind or "writer (no blocks or parallel loops)"
    title = f"{tiles.tensor}: colour = {what}, {count} in all"
    if tiles.block_kind == "block":
        title += "; label = threadIdx x,y"
    ax.set_title(title)
    if width is None:
        ax.set_xlabel("last index")
    else:
        rows = range(ids.shape[0])
        ax.set_yticks(list(rows), [str(r * width) for r in rows])
        ax.set_ylabel("index at the row's start")
        ax.set_xlabel(f"index within the row ({width} per row)")
    fig.tight_layout()
    return fig


def _wrapped(values: np.ndarray, width: int) -> np.ndarray:
    """A 1-d array (of numbers or of index triples) in rows of `width`, the last row filled
    with `UNWRITTEN` past the end."""
    rows = -(-values.shape[0] // width)
    padded = np.full((rows * width,) + values.shape[1:], UNWRITTEN, values.dtype)
    padded[: values.shape[0]] = values
    return padded.reshape((rows, width) + values.shape[1:])


def plot_footprint(
    schedule: Schedule,
    cache_stage: object,
    input: object = None,
    at: Mapping[str, int] | None = None,
    **sizes: int,
):
    """The elements of `input` that one instance of `cache_stage` reads (what it stages).

    `cache_stage` is a stage computed at a loop of its consumer (as ``s[AA].compute_at(s[C],
    ko)`` after ``AA = s.cache_read(A, "shared", [C])``), given as its tensor or name; `input`
    defaults to the one tensor it reads. The loops around it take the values `at` (by loop
    name; 0 for those not named), except, for a "shared" stage, the loops bound to threads,
    which the block's threads run together. The footprint is computed exactly by the
    polyhedral layer at `sizes` (``M=64, ...``) and drawn over the whole input, with its
    bounding box; returns the Figure, whose image holds 1 where the stage reads.
    """
    from ..poly.footprint import footprint

    stage = schedule[cache_stage]
    read = [t.op.name for t in stage.op.input_tensors]
    if input is None:
        if len(read) != 1:
            raise ValueError(
                f"'{stage.name}' reads {', '.join(read) or 'nothing'}; name the input to draw "
                "with input="
            )
        input = read[0]
    name = getattr(input, "name", input)
    bound = bind_sizes([st.op.shape for st in schedule.stages], sizes, "plot_footprint")
    found = footprint(schedule, stage, name, at or {}, bound)
    elements = _as_2d(found.elements, name, "plot_footprint")
    fig = figure(figsize=_size(elements.shape))
    ax = fig.add_subplot()
    ax.imshow(
        elements.astype(np.int8), cmap=_two_colours(), vmin=0, vmax=1, interpolation="nearest"
    )
    rows, cols = np.nonzero(elements)
    if rows.size:
        from matplotlib.patches import Rectangle

        corner = (cols.min() - 0.5, rows.min() - 0.5)
        width, height = cols.max() - cols.min() + 1, rows.max() - rows.min() + 1
        ax.add_patch(Rectangle(corner, width, height, fill=False, linestyle="--", linewidth=1.5))
    where = ", ".join(f"{k}={v}" for k, v in found.at.items()) or "root"
    title = f"{stage.name} at {where}: {int(elements.sum())} elements of {name}"
    if found.free:
        title += f"\n(all values of {', '.join(found.free)}: the block's threads)"
    ax.set_title(title)
    ax.set_xlabel("last index")
    fig.tight_layout()
    return fig


def plot_roofline(results: object, ceilings: object = None):
    """Each schedule of a `sl.compare` result (or a list of them) at its arithmetic intensity
    and achieved GFLOP/s, under the roofs of the device: the peaks of a GPU, or on a CPU roofs
    measured here (`display.ceilings.cpu_ceilings`) unless `ceilings` are given. Wrong results
    are drawn in red. Returns the Figure."""
    from .ceilings import cpu_ceilings

    comparisons = results if isinstance(results, Sequence) else [results]
    for c in comparisons:
        if not c.flops:
            raise ValueError(
                "an algorithm without arithmetic has no place on a roofline; compare its GB/s "
                "with the bandwidth instead"
            )
    first = comparisons[0]
    roof = ceilings or first.ceilings or cpu_ceilings(first.dtype)
    points = []
    for c in comparisons:
        for row in c.rows:
            points.append((row.name, c.flops / c.bytes, c.flops / row.seconds, row.verified))
    fig = figure(figsize=(6.5, 4.5))
    ax = fig.add_subplot()
    intensities = [p[1] for p in points]
    ridge = roof.flops / roof.bandwidth if roof.flops else max(intensities)
    x = np.geomspace(min(intensities + [ridge]) / 8, max(intensities + [ridge]) * 8, 200)
    y = x * roof.bandwidth
    if roof.flops:
        y = np.minimum(y, roof.flops)
        ax.axhline(roof.flops / 1e9, linestyle=":", linewidth=0.8, color="grey")
    ax.plot(x, y / 1e9, color="black", linewidth=1.5)
    for name, intensity, rate, verified in points:
        ax.scatter([intensity], [rate / 1e9], color="tab:blue" if verified else "tab:red", zorder=3)
        ax.annotate(name, (intensity, rate / 1e9), textcoords="offset points", xytext=(5, 4))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved at least)")
    ax.set_ylabel("GFLOP/s")
    peak = f"{roof.flops / 1e9:.0f} GFLOP/s, " if roof.flops else ""
    ax.set_title(f"{roof.device}: {peak}{roof.bandwidth / 1e9:.0f} GB/s\n{roof.source}", fontsize=8)
    fig.tight_layout()
    return fig


def _as_2d(values: np.ndarray, name: str, call: str) -> np.ndarray:
    if values.ndim == 1:
        return values.reshape(1, -1)
    if values.ndim != 2:
        raise ValueError(f"{call} draws 1-d and 2-d tensors; '{name}' has {values.ndim} dimensions")
    return values


def _size(shape: tuple[int, ...]) -> tuple[float, float]:
    rows, cols = shape
    scale = 7.0 / max(rows, cols)
    return (max(3.0, cols * scale + 1.5), max(2.0, rows * scale + 1.2))


def distinct_colours(n: int):
    """`n` colours, no two alike: matplotlib's tab20 up to 20 (its pairs of a hue, dark and
    light, look apart side by side); beyond, the turbo colour map sampled at `n` even steps
    and taken in an order that strides across it, so that neighbouring blocks (numbers k and
    k + 1) get colours far apart rather than two shades of one."""
    from math import gcd

    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap

    base = colormaps["tab20"].colors
    if n <= len(base):
        return ListedColormap(list(base[:n]))
    samples = colormaps["turbo"](np.linspace(0.0, 1.0, n))
    stride = next(s for s in range(max(2, round(n * 0.382)), n) if gcd(s, n) == 1)
    return ListedColormap([samples[k * stride % n] for k in range(n)])


def _two_colours():
    from matplotlib.colors import ListedColormap

    return ListedColormap(["#eeeeee", "tab:orange"])
