"""The range of every loop of a schedule as expressions (TE's bound inference): the extents
`poly.loop_extents` derives, each from 0 (a stage computed at a loop runs over the box read
there in box-relative coordinates, TE's normalized form) but a scan body's steps, which start
after the init's rows."""

from __future__ import annotations

from .ir.expr import const
from .ir.tensor import Range
from .loopir.from_isl import param_expr
from .poly.loop_extents import Extent, loop_extents
from .poly.space import Params
from .schedule.axis import Axis
from .schedule.schedule import Schedule


def loop_ranges(s: Schedule) -> dict[str, dict[Axis, Range]]:
    """Stage name -> its loops (root axes and those split and fuse made) -> their ranges, for
    every stage that has loops of its own (not placeholders, inlined or extern stages)."""
    extents, params = loop_extents(s)
    return {
        name: {axis: Range(_start(e), _expr(e, params)) for axis, e in loops.items()}
        for name, loops in extents.items()
    }


def _start(extent: Extent):
    return const(0) if extent.start is None else extent.start


def _expr(extent: Extent, params: Params):
    if extent.constant is not None:
        return const(extent.constant)
    if extent.expr is not None:
        return extent.expr
    return param_expr(extent.sizes, params.context, params.vars)
