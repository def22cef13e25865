"""A chain of stencils with diagonal taps, each computed in tiles of the next (Halide style).

Each stage combines the centre and the four diagonal neighbours of the one before, an X of
taps as in demosaicing: ``0.5 * p[y+1, x+1] + 0.125 * (p[y, x] + p[y, x+2] + p[y+2, x] +
p[y+2, x+2])``, so each is 2 smaller than its input in both dimensions. Every stage is tiled,
and each is computed at the next one's column of tiles: a tile of the output recomputes the
(2 larger) tile of each stage before it that it needs, and no intermediate image is stored
whole.
"""

from __future__ import annotations

import schedlang as sl


def _x_taps(p):
    return lambda y, x: (
        0.5 * p[y + 1, x + 1] + 0.125 * (p[y, x] + p[y, x + 2] + p[y + 2, x] + p[y + 2, x + 2])
    )


def x_stencils(h: int, w: int, depth: int) -> tuple[sl.Tensor, list[sl.Tensor]]:
    """The input and the `depth` stages, the last one the output."""
    a = sl.placeholder((h, w), name="A")
    stages: list[sl.Tensor] = []
    for d in range(depth):
        shape = (h - 2 - 2 * d, w - 2 - 2 * d)
        stages.append(sl.compute(shape, _x_taps(stages[-1] if stages else a), name=f"X{d}"))
    return a, stages


def schedule(stages: list[sl.Tensor], tile: int = 32) -> sl.Schedule:
    """Every stage tiled by `tile` x `tile`, each computed at the next one's column of tiles."""
    s = sl.create_schedule(stages[-1])
    for consumer, producer in zip(stages[:0:-1], stages[-2::-1]):
        y, x = consumer.op.axis
        _, xo, _, _ = s[consumer].tile(y, x, tile, tile)
        s[producer].compute_at(s[consumer], xo)
    return s
