"""The range of every loop of a schedule, as the polyhedral layer places the stages (TE's
bound inference).

A stage computed at another's loop runs over the box of what its readers need there, in
box-relative coordinates (its axes start at 0, TE's normalized form), so its root axes' extents
are the box's (the largest over the loops around it, as its buffer is sized) and its loops'
extents follow from them. A stage at root runs over its whole shape. Extents are exact: isl
derives each from the placed statements (``8 * m`` split by 8 gives an outer loop of extent
``m``), a constant where the sizes do not matter.
"""

from __future__ import annotations

import islpy as isl

from .ir.expr import Expr, const
from .ir.tensor import ComputeOp, Range
from .loopir.from_isl import param_expr
from .poly.placement import Placed, Placement, largest_value
from .poly.scans import aliases, find_scans, first_step
from .poly.space import Params
from .poly.statements import build_statements, inline_bodies
from .schedule.axis import Axis
from .schedule.introspect import made_axes
from .schedule.schedule import Schedule
from .schedule.stage import Stage


def loop_ranges(s: Schedule) -> dict[str, dict[Axis, Range]]:
    """Stage name -> its loops (root axes and those split and fuse made) -> their ranges, for
    every stage that has loops of its own (not placeholders, inlined or extern stages)."""
    params = Params([op for stage in s.stages for op in stage.ops])
    scans = find_scans(s)
    params.aliases = aliases(scans)
    statements = build_statements(s, inline_bodies(s), params, first_step(scans))
    placement = Placement(s, statements, params)
    out: dict[str, dict[Axis, Range]] = {}
    for stage in s.stages:
        placed = placement.placed.get(stage.name)
        if placed and isinstance(stage.op, ComputeOp):
            out[stage.name] = _stage_ranges(stage, placed, placement, params)
    return out


def _stage_ranges(
    stage: Stage, placed: list[Placed], placement: Placement, params: Params
) -> dict[Axis, Range]:
    ranges: dict[Axis, Range] = {}
    storage = placement.storage.get(stage.op)
    for d, (iv, axis) in enumerate(zip(stage.op.axis, stage.root_axes)):
        if storage is None:
            ranges[axis] = iv.dom
        elif storage.constant[d] is not None:
            ranges[axis] = Range(const(0), const(storage.constant[d]))
        else:
            ranges[axis] = Range(const(0), _sizes_expr(storage.extents[d], params))
    for iv, axis in zip(stage.op.reduce_axis, stage.root_axes[len(stage.op.axis) :]):
        ranges[axis] = Range(const(0), iv.dom.extent)
    for p in placed:
        own = [entry[1] for entry in p.template if entry[0] == "dim"][p.prefix_len :]
        for j, axis in enumerate(own):
            if axis not in ranges:
                extent = _loop_extent(p, p.prefix_len + j)
                ranges[axis] = Range(const(0), _expr(extent, params))
    # Loops isl does not schedule as such (split again, or fused and kept as their parts):
    # their extents as the lowering counts them.
    known = placement.extents.get(stage.name, {})
    for axis in made_axes(stage):
        if axis not in ranges and known.get(axis) is not None:
            ranges[axis] = Range(const(0), const(known[axis]))
    return ranges


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


def _expr(extent: isl.PwAff, params: Params) -> Expr:
    """`extent` (of the loops around a stage) as an expression: its largest value where it
    has one (a loop split by 8 runs 8 times, fewer only at a tail), else the largest as isl's
    expression of the sizes."""
    bound = largest_value(extent, params.context)
    if bound is not None:
        return const(bound)
    values = isl.Map.from_pw_aff(extent).range().intersect_params(params.context)
    return _sizes_expr(values.dim_max(0), params)


def _sizes_expr(extent: isl.PwAff, params: Params) -> Expr:
    return param_expr(extent.gist_params(params.context), params.context, params.vars)
