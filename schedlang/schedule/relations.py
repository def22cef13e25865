"""A stage's root loops as expressions of its leaf loops (TE's "pass up" of split and fuse).

The polyhedral layer states these relations exactly in isl; rfactor needs them as algorithm
expressions instead, because it writes them into the body of a new op.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.expr import Const, Expr, Var, const
from ..ir.tensor import Range
from . import records as rec
from .axis import Axis
from .stage import Stage


@dataclass(frozen=True)
class LeafForm:
    """`roots[a]` is root axis `a` (counted from its min) in terms of the leaf variables
    `leaf_vars`; `guards` must hold for a leaf point to be inside the root domain (the tails
    of splits that do not divide)."""

    leaf_vars: dict[Axis, Var]
    extents: dict[Axis, Expr]
    roots: dict[Axis, Expr]
    guards: tuple[Expr, ...]


def _ceildiv(extent: Expr, factor: int) -> Expr:
    if isinstance(extent, Const):
        return const(-(-extent.value // factor))
    return (extent + (factor - 1)) // factor


def _divides(extent: Expr, factor: int) -> bool:
    return isinstance(extent, Const) and extent.value % factor == 0


def leaf_form(stage: Stage, axes: list[Axis], kind: str) -> LeafForm:
    """Express the root axes of `kind` ("data" or "reduce") through `axes`' leaves.

    `axes` are the current leaves of that kind; each is its variable (`Axis.var`).
    """
    extents: dict[Axis, Expr] = {
        a: stage.itervars[a].dom.extent for a in stage.root_axes if a.kind == kind
    }
    for r in stage.relations:
        if isinstance(r, rec.Split):
            if r.parent.kind != kind:
                continue
            parent = extents[r.parent]
            if r.factor is not None:
                extents[r.outer], extents[r.inner] = _ceildiv(parent, r.factor), const(r.factor)
            else:
                inner = -(-parent.value // r.nparts)
                extents[r.outer], extents[r.inner] = const(r.nparts), const(inner)
        elif r.axes[0].kind == kind:
            total = extents[r.axes[0]]
            for a in r.axes[1:]:
                total = (
                    const(total.value * extents[a].value)
                    if isinstance(total, Const)
                    else (total * extents[a])
                )
            extents[r.fused] = total
    leaf_vars = {a: a.var for a in axes}
    values: dict[Axis, Expr] = dict(leaf_vars)
    guards: list[Expr] = []
    for r in reversed(stage.relations):
        if isinstance(r, rec.Split):
            if r.parent.kind != kind:
                continue
            factor = r.factor if r.factor is not None else extents[r.inner].value
            values[r.parent] = values[r.outer] * factor + values[r.inner]
            exact = _divides(extents[r.parent], factor)
            if r.nparts is not None:  # 8 in 5 parts of 2: the last part lies past the end
                exact = exact and r.nparts * factor == extents[r.parent].value
            if not exact:
                guards.append(values[r.parent] < extents[r.parent])
        elif r.axes[0].kind == kind:
            rest = values[r.fused]
            for a in reversed(r.axes[1:]):
                values[a] = rest % extents[a]
                rest = rest // extents[a]
            values[r.axes[0]] = rest
    roots = {a: values[a] for a in stage.root_axes if a.kind == kind}
    return LeafForm(leaf_vars, {a: extents[a] for a in axes}, roots, tuple(reversed(guards)))


def leaf_range(form: LeafForm, axis: Axis) -> Range:
    return Range(const(0), form.extents[axis])
