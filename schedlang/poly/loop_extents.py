"""How many values every loop of a schedule takes, as the stages are placed (TE's bound
inference, in isl's terms; `schedlang.loop_ranges` gives them as expressions).

A stage computed at another's loop runs over the box of what its readers need there, in
box-relative coordinates (its axes start at 0, TE's normalized form), so its root axes' extents
are the box's (the largest over the loops around it, as its buffer is sized) and its loops'
extents follow from them. A stage at root runs over its whole shape. Each extent is exact: the
largest number of values the loop takes for one value of the loops around it, a constant
where it has a largest value, else a function of the sizes (``8 * m`` split by 8 gives an outer
loop of extent ``m``).
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..ir.expr import Expr
from ..ir.tensor import ComputeOp
from ..schedule.axis import Axis
from ..schedule.introspect import made_axes
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .placement import Placed, Placement, largest_value
from .scans import aliases, find_scans, first_step
from .space import Params
from .statements import build_statements, inline_bodies


@dataclass(frozen=True)
class Extent:
    """One of: `constant`; `sizes`, a function of the sizes (isl parameters); `expr`, the
    extent as the algorithm wrote it (an axis's own range). The loop starts at `start` (0
    unless it is the steps of a scan's body, which start after the init's rows)."""

    constant: int | None = None
    sizes: isl.PwAff | None = None
    expr: Expr | None = None
    start: Expr | None = None


def loop_extents(s: Schedule) -> tuple[dict[str, dict[Axis, Extent]], Params]:
    """Stage name -> its loops (root axes and those split and fuse made) -> their extents,
    for every compute stage with loops of its own; and the sizes they are functions of."""
    params = Params([op for stage in s.stages for op in stage.ops])
    scans = find_scans(s)
    params.aliases = aliases(scans)
    steps = first_step(scans)
    statements = build_statements(s, inline_bodies(s), params, steps)
    placement = Placement(s, statements, params)
    out: dict[str, dict[Axis, Extent]] = {}
    for stage in s.stages:
        placed = placement.placed.get(stage.name)
        if placed and isinstance(stage.op, ComputeOp):
            first = steps.get(stage.name)
            out[stage.name] = _stage_extents(stage, placed, placement, params, first)
    return out, params


def _stage_extents(
    stage: Stage, placed: list[Placed], placement: Placement, params: Params, first: Expr | None
) -> dict[Axis, Extent]:
    extents: dict[Axis, Extent] = {}
    storage = placement.storage.get(stage.op)
    for d, (iv, axis) in enumerate(zip(stage.op.axis, stage.root_axes)):
        if storage is None and d == 0 and first is not None:  # a scan's steps after its init
            extents[axis] = Extent(expr=iv.dom.extent - first, start=first)
        elif storage is None:
            extents[axis] = Extent(expr=iv.dom.extent)
        else:
            extents[axis] = Extent(storage.constant[d], storage.extents[d])
    for iv, axis in zip(stage.op.reduce_axis, stage.root_axes[len(stage.op.axis) :]):
        extents[axis] = Extent(expr=iv.dom.extent)
    for p in placed:
        own = [entry[1] for entry in p.template if entry[0] == "dim"][p.prefix_len :]
        for j, axis in enumerate(own):
            if axis not in extents:
                extents[axis] = _largest(_loop_extent(p, p.prefix_len + j), params)
    # Loops isl does not schedule as such (split again, or fused and kept as their parts):
    # their extents as the lowering counts them.
    known = placement.extents.get(stage.name, {})
    for axis in made_axes(stage):
        if axis not in extents and known.get(axis) is not None:
            extents[axis] = Extent(known[axis])
    return extents


def _loop_extent(p: Placed, dim: int) -> isl.PwAff:
    """How many values loop `dim` of `p` takes, as a function of the loops around the stage
    (a dimension of value 0 stands for them at root)."""
    values = p.loops.intersect_domain(p.domain).range()
    n = values.dim(isl.dim_type.set)
    keep = p.prefix_len
    values = values.project_out(isl.dim_type.set, dim + 1, n - dim - 1)
    values = values.project_out(isl.dim_type.set, keep, dim - keep)
    if keep == 0:
        values = values.insert_dims(isl.dim_type.set, 0, 1).fix_val(
            isl.dim_type.set, 0, isl.Val.zero(values.get_ctx())
        )
        keep = 1
    per_prefix = isl.Map.from_range(values).move_dims(
        isl.dim_type.in_, 0, isl.dim_type.out, 0, keep
    )
    low, high = per_prefix.dim_min(0), per_prefix.dim_max(0)
    return high.sub(low).add_constant_val(isl.Val.one(high.get_ctx()))


def _largest(extent: isl.PwAff, params: Params) -> Extent:
    """The largest value of `extent` (of the loops around a stage): a constant where it has
    one (a loop split by 8 runs 8 times, fewer only at a tail), else a function of the sizes."""
    bound = largest_value(extent, params.context)
    if bound is not None:
        return Extent(bound)
    values = isl.Map.from_pw_aff(extent).range().intersect_params(params.context)
    return Extent(sizes=values.dim_max(0).gist_params(params.context))
