"""``te.schedule.InferBound``: the range of every loop of a schedule, keyed as TE code holds
the loops (a root loop by its IterVar, a loop split or fuse made by the axis returned)."""

from __future__ import annotations

from ..errors import entry_point
from ..loop_ranges import loop_ranges
from ..schedule.introspect import shown
from ..schedule.schedule import Schedule
from .container import Map


@entry_point
def InferBound(sch: Schedule) -> Map:  # noqa: N802 - TE's name
    """Each loop's `Range` (``.min``, ``.extent``). A stage computed at another's loop runs
    over the box of what is read of it there, from 0 (as TE's normalized schedule): its
    extents are the box's, the largest over the loops around it."""
    ranges = loop_ranges(sch)
    bounds = Map()
    for stage in sch.stages:
        for axis, extent in ranges.get(stage.name, {}).items():
            bounds[shown(stage, axis)] = extent
    return bounds
