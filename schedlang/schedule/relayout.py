"""cache_write of a stage whose loops were split, fused or reordered (TE's relayout).

The cache stage computes the values in the stage's loop order: its axes are the stage's data
loops as they are now (``i.outer.c, j.c, i.inner.c`` after ``split(i, 4)`` and a reorder), its
buffer laid out the same way, and its body is the stage's with each original index rebuilt from
them (``i = 4 * i.outer + i.inner``); where a split does not divide, the points past the end
compute nothing (a guard, or the reduction's condition). The stage itself becomes a copy out of
the cache, its loops back to its own axes. The loops the user held before are no longer loops
of either stage, as in TE.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..ir.expr import Expr, Reduce, Var, const, logical, select
from ..ir.integers import as_int
from ..ir.tensor import ComputeOp, IterVar, Range
from ..ir.visit import substitute
from . import records as rec
from .axis import Axis
from .errors import ScopeError, message

if TYPE_CHECKING:
    from .stage import Stage


def relaid(stage: Stage, name: str, call: str, loc: str) -> tuple[ComputeOp, tuple[Expr, ...]]:
    """The cache op of `stage` laid out by its loops, and the index of the cache element that
    holds the stage's element (from the stage's own axis variables)."""
    _check(stage, call, loc)
    op = stage.op
    extents = _extents(stage, call, loc)
    data_leaves = [a for a in stage.leaves if a.kind == "data"]
    axes = tuple(
        IterVar(Var(f"{a.name}.c", "int32", "axis"), Range(const(0), extents[a]), "data")
        for a in data_leaves
    )
    value = {a: iv.var for a, iv in zip(data_leaves, axes)}
    valid: list[Expr] = []
    for r in reversed(stage.relations):
        if isinstance(r, rec.Split):
            factor = r.factor if r.factor is not None else extents[r.inner]
            value[r.parent] = value[r.outer] * factor + value[r.inner]
            valid.append(value[r.parent] < extents[r.parent])
        elif r.axes:  # (a fuse of no loops, TE's singleton, gives no loop a value)
            rest = value[r.fused]
            for a in reversed(r.axes[1:]):
                value[a] = rest % extents[a]
                rest = rest // extents[a]
            value[r.axes[0]] = rest
    roots = {iv.var: value[a] for iv, a in zip(op.axis, stage.root_axes)}
    roots.update({iv: value[a] for iv, a in zip(op.axis, stage.root_axes)})
    body = substitute(op.expr, roots)
    if valid:
        guard = logical("and", valid)
        if isinstance(body, Reduce):
            where = guard if body.where is None else logical("and", (body.where, guard))
            body = replace(body, where=where)
        else:
            body = select(guard, body, const(0, body.dtype))
    cache_op = ComputeOp(name, op.tag, axes, op.reduce_axis, body)
    return cache_op, _index(stage, data_leaves, extents)


def _index(stage: Stage, leaves: list[Axis], extents: dict[Axis, Expr]) -> tuple[Expr, ...]:
    """Each data loop's value from the stage's own indices (the cache element it reads)."""
    value: dict[Axis, Expr] = {a: iv.var for iv, a in zip(stage.op.axis, stage.root_axes)}
    for r in stage.relations:
        if isinstance(r, rec.Split):
            factor = r.factor if r.factor is not None else extents[r.inner]
            value[r.outer] = value[r.parent] // factor
            value[r.inner] = value[r.parent] % factor
        else:
            fused = value[r.axes[0]] if r.axes else const(0)
            for a in r.axes[1:]:
                fused = fused * extents[a] + value[a]
            value[r.fused] = fused
    return tuple(value[a] for a in leaves)


def _extents(stage: Stage, call: str, loc: str) -> dict[Axis, Expr]:
    """Every data loop's extent, as an expression of the sizes."""
    extents: dict[Axis, Expr] = {a: iv.dom.extent for iv, a in zip(stage.op.axis, stage.root_axes)}
    for r in stage.relations:
        if isinstance(r, rec.Split):
            parent = extents[r.parent]
            if r.factor is not None:
                extents[r.outer] = _ceil_div(parent, r.factor)
                extents[r.inner] = const(r.factor)
            else:
                extents[r.outer] = const(r.nparts)
                extents[r.inner] = _ceil_div(parent, r.nparts)
        else:
            symbolic = [a.name for a in r.axes[1:] if as_int(extents[a]) is None]
            if symbolic:
                _refuse(
                    stage,
                    call,
                    loc,
                    f"'{symbolic[0]}', fused as an inner loop, has a symbolic extent, so the "
                    "cache cannot be laid out by the fused loop",
                )
            total = extents[r.axes[0]] if r.axes else const(1)
            for a in r.axes[1:]:
                known = as_int(total)
                inner = as_int(extents[a])
                total = const(known * inner) if known is not None else total * inner
            extents[r.fused] = total
    return extents


def _ceil_div(extent: Expr, amount: int) -> Expr:
    known = as_int(extent)
    if known is not None:
        return const(-(-known // amount))
    return (extent + (amount - 1)) // amount


def _check(stage: Stage, call: str, loc: str) -> None:
    """Only the loop order can move to the cache: placements and annotations are refused."""
    if stage.attach is not None or stage.tensorized is not None:
        _refuse(stage, call, loc, "it already has a placement or is tensorized")
    if stage.annotations or stage.binds:
        _refuse(stage, call, loc, "its loops are already annotated or bound")
    touched = any(a.kind == "reduce" for r in stage.relations for a in _axes_of(r))
    kinds = [a.kind for a in stage.leaves]
    moved = "reduce" in kinds and "data" in kinds[kinds.index("reduce") :]
    if touched or moved:
        _refuse(stage, call, loc, "its reduce loops were split, fused or moved")


def _axes_of(r: object) -> tuple[Axis, ...]:
    return (r.parent,) if isinstance(r, rec.Split) else r.axes


def _refuse(stage: Stage, call: str, loc: str, why: str) -> None:
    raise ScopeError(
        message(
            stage.name,
            call,
            loc,
            f"'{stage.name}' cannot be cached in the layout of its loops: {why}; call "
            "cache_write before that (its loops then move to the cache stage)",
        )
    )
