"""A nest of a hybrid script's loops as its stage's schedule has them.

The script's loops are the stage's axes, so split, fuse, reorder and the loop kinds apply to
them as to a compute's, with the arithmetic of TE's hybrid op: a split by `factor` makes
``parent = outer * factor + inner`` (``nparts``: the factor is the extent divided by it,
rounded up), a fuse makes ``fused = outer * extent(inner) + inner``, and a split that may not
divide its loop guards the body with ``parent < extent``. The loops a nest is made of are those
perfectly nested in the script (each the only statement of the one around it): a schedule that
relates loops of two different nests is refused, as the script gives them no common loop.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import LoweringError
from ...ir.expr import Const, Expr, Var, as_expr
from ...ir.hybrid.nodes import Loop
from ...schedule import records as rec
from ...schedule.axis import Axis
from ...schedule.stage import Stage

_KINDS = {"unrolled": "unrolled", "vectorized": "vectorized", "parallel": "parallel"}


@dataclass(frozen=True)
class LeafLoop:
    var: Var
    extent: Expr
    kind: str
    thread: str | None


@dataclass(frozen=True)
class Nest:
    """The loops to emit, outer first; the value of each script loop variable in them; the
    conditions under which the body runs."""

    loops: tuple[LeafLoop, ...]
    values: dict[Var, Expr]
    guards: tuple[Expr, ...]


def perfect_chain(loop: Loop) -> list[Loop]:
    """`loop` and the loops perfectly nested in it."""
    chain = [loop]
    while len(chain[-1].body) == 1 and isinstance(chain[-1].body[0], Loop):
        chain.append(chain[-1].body[0])
    return chain


def scheduled_nest(stage: Stage, chain: list[Loop]) -> Nest:
    """The loops `stage`'s schedule makes of the script loops `chain` (see the module)."""
    axis_of = {iv.var: axis for axis, iv in stage.itervars.items()}
    root_of = {axis_of[loop.var]: loop for loop in chain}
    extents: dict[Axis, Expr] = {axis: loop.extent for axis, loop in root_of.items()}
    derived = set(extents)
    relations = []
    for r in stage.relations:
        inputs = (r.parent,) if isinstance(r, rec.Split) else r.axes
        inside = [a in derived for a in inputs]
        if not any(inside):
            continue
        if not all(inside):
            names = ", ".join(a.name for a in inputs)
            raise LoweringError(
                f"In schedule for '{stage.name}': fuse({names}) relates loops of the hybrid "
                "script that are not perfectly nested in it; fuse loops of one nest"
            )
        relations.append(r)
        for made, extent in _made(r, extents):
            extents[made] = extent
            derived.add(made)
    leaves = [a for a in stage.leaves if a in derived]
    variables = {a: Var(a.name, "int32", "loop") for a in leaves}
    values: dict[Axis, Expr] = dict(variables)
    guards: list[Expr] = []
    for r in reversed(relations):
        if isinstance(r, rec.Split):
            factor = extents[r.inner]
            values[r.parent] = values[r.outer] * factor + values[r.inner]
            if not _divides(factor, extents[r.parent]):
                guards.append(values[r.parent] < extents[r.parent])
        else:
            rest: Expr | None = None  # the extents of the axes inside `a` multiplied
            for a in reversed(r.axes):
                part = values[r.fused] if rest is None else values[r.fused] // rest
                values[a] = part if a is r.axes[0] else part % extents[a]
                rest = extents[a] if rest is None else extents[a] * rest
    loops = []
    for a in leaves:
        root = root_of.get(a)
        kind = stage.annotations.get(a)
        thread = stage.binds.get(a)
        if thread is not None:
            kind = "bound"
        elif kind is None:
            kind, thread = (root.kind, root.thread) if root is not None else ("serial", None)
        loops.append(LeafLoop(variables[a], as_expr(extents[a]), _KINDS.get(kind, kind), thread))
    script_values = {loop.var: _offset(loop.min, values[a]) for a, loop in root_of.items()}
    return Nest(tuple(loops), script_values, tuple(guards))


def _made(r, extents: dict[Axis, Expr]) -> list[tuple[Axis, Expr]]:
    if isinstance(r, rec.Split):
        parent = extents[r.parent]
        if r.factor is not None:
            return [(r.outer, _ceil_div(parent, r.factor)), (r.inner, as_expr(r.factor))]
        return [(r.outer, as_expr(r.nparts)), (r.inner, _ceil_div(parent, r.nparts))]
    total = extents[r.axes[0]]
    for a in r.axes[1:]:
        total = total * extents[a]
    return [(r.fused, as_expr(total))]


def _ceil_div(extent: Expr, parts: int) -> Expr:
    if isinstance(extent, Const):
        return as_expr(-(-int(extent.value) // parts))
    return (extent + (parts - 1)) // parts


def _divides(factor: Expr, extent: Expr) -> bool:
    if isinstance(factor, Const) and isinstance(extent, Const):
        return int(extent.value) % int(factor.value) == 0
    return False


def _offset(lo: Expr, value: Expr) -> Expr:
    return value if isinstance(lo, Const) and lo.value == 0 else lo + value
