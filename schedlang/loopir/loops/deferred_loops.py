"""The loops isl cannot state, made by the code generator from those it can (`poly.loops`):
`strip_mined` cuts isl's loop over a split's parent into ``nparts`` parts of
``ceil(extent / nparts)``, and `fused_loops` turns isl's nest of a fuse's root loops into the
fused loop (or its split by a factor), each root index recovered by division and modulo.
Both keep the parent's values in order and guard the tail, so the legality isl proved on the
loops it scheduled holds for the loops made here. The fused tile loops of persistent blocks
(`poly.loops._tiles`) count a block's tiles with their loop's extent instead, so that a
pipeline across them knows how many steps it fills ahead.
"""

from __future__ import annotations

from ...ir.expr import Binary, Compare, Const, Expr, Var
from ...schedule.errors import FactorError, message
from ..core.nodes import For, If, Let, Stmt
from ..core.visit import walk_expr, walk_stmt


def strip_mined(gen, split, var: Var, low, upper, extent, body: Stmt, kind, thread) -> Stmt:
    """isl's loop over the parent's values (`var`) as `split`'s two loops."""
    parts = gen.const(split.nparts)
    rounded = Binary("+", extent, gen.const(split.nparts - 1), gen.itype)
    each = Binary("//", rounded, parts, gen.itype)
    outer = Var(gen._unique(split.outer.name), gen.itype, "loop")
    inner = Var(gen._unique(split.inner.name), gen.itype, "loop")
    start = Binary("+", low, Binary("*", outer, each, gen.itype), gen.itype)
    guarded = Let(var, Binary("+", start, inner, gen.itype), If(Compare("<", var, upper), body))
    loop = For(inner, gen.const(0), each, "serial", guarded, None)
    if kind == "bound":
        return gen._bound(split.outer, outer, gen.const(0), parts, loop)
    return For(outer, gen.const(0), parts, kind, loop, thread)


def fused_loops(gen, group, nest: For) -> Stmt:
    """isl's nest of `group`'s root loops (from `nest`, the outermost isl made: it makes no
    loop for a root loop of one value) as the fused loop."""
    loops, body = [], nest
    full = gen.extents.get(group.fuse.stage, {})
    ragged = False  # a loop's range depends on the loops around it (tails)
    for component in group.components[group.components.index(gen.var_axis[nest.var]) :]:
        inner = [loop.var for loop in loops]
        here = isinstance(body, For) and gen.var_axis.get(body.var) is component
        outer_vars = here and any(v in inner for n in (body.min, body.extent) for v in _vars(n))
        if here and (not outer_vars or (group.tiles and full.get(component) is not None)):
            ragged = ragged or outer_vars
            loops.append(body)
            body = body.body
        elif any(
            isinstance(n, For) and gen.var_axis.get(n.var) is component for n in walk_stmt(body)
        ):
            return _unfused(gen, group, nest)  # not one perfect, rectangular nest
    itype = gen.itype
    if ragged:
        loops, body = _boxed(gen, loops, body, full)
    total = loops[0].extent
    for loop in loops[1:]:
        total = Binary("*", total, loop.extent, itype)
    stage = gen.schedule[group.fuse.stage]
    kinds = [
        "bound" if a in stage.binds else stage.annotations.get(a, "serial") for a in group.leaves
    ]
    made = [Var(gen._unique(a.name), itype, "loop") for a in group.leaves]
    index = made[0]
    if group.split is not None:
        index = Var(gen._unique(group.fuse.fused.name), itype, "loop")
    inside: Expr | None = None  # the product of the extents of the loops inside
    for loop in reversed(loops):
        value = index if inside is None else Binary("//", index, inside, itype)
        if loop is not loops[0]:
            value = Binary("%", value, loop.extent, itype)
        body = Let(loop.var, Binary("+", loop.min, value, itype), body)
        inside = loop.extent if inside is None else Binary("*", inside, loop.extent, itype)
    if group.split is None:
        if kinds[0] == "bound":  # a block a tile
            return gen._bound(group.leaves[0], made[0], gen.const(0), total, body)
        return For(made[0], gen.const(0), total, kinds[0], body, None)
    factor = gen.const(group.factor)
    first = Binary("*", made[0], factor, itype)
    start = Binary("+", first, made[1], itype)
    rounded = Binary("+", total, gen.const(group.factor - 1), itype)
    outer = Binary("//", rounded, factor, itype)
    if group.tiles:
        # the last block's tiles counted by its loop, not guarded one by one: a pipeline
        # across a block's tiles then counts the steps it fills ahead (`bulk_pipeline`)
        left = Binary("min", factor, Binary("-", total, first, itype), itype)
        inner_loop = For(made[1], gen.const(0), left, kinds[1], Let(index, start, body), None)
    else:
        body = Let(index, start, If(Compare("<", index, total), body))
        inner_loop = For(made[1], gen.const(0), factor, kinds[1], body, None)
    if kinds[0] == "bound":
        return gen._bound(group.leaves[0], made[0], gen.const(0), outer, inner_loop)
    return For(made[0], gen.const(0), outer, kinds[0], inner_loop, None)


def _boxed(gen, loops: list[For], body: Stmt, full: dict) -> tuple[list[For], Stmt]:
    """A nest of tile loops with tails as a box: each inner loop over every value of its
    loop (its constant extent), `body` guarded to the values isl's loop took there."""
    itype = gen.itype
    conds: list[Expr] = []
    boxed = [loops[0]]
    for loop in loops[1:]:
        extent = full[gen.var_axis[loop.var]]
        whole = isinstance(loop.min, Const) and loop.min.value == 0
        whole = whole and isinstance(loop.extent, Const) and loop.extent.value == extent
        if not whole:
            end = Binary("+", loop.min, loop.extent, itype)
            conds += [Compare("<=", loop.min, loop.var), Compare("<", loop.var, end)]
        boxed.append(For(loop.var, gen.const(0), gen.const(extent), loop.kind, loop.body))
    if conds:
        cond = conds[0]
        for more in conds[1:]:
            cond = Binary("and", cond, more, "bool")
        body = If(cond, body)
    return boxed, body


def _unfused(gen, group, nest: For) -> Stmt:
    """The root loops as isl made them, where it did not nest them alone (the stage's
    statements apart, a guard between): right as long as the fused loops are serial."""
    stage = gen.schedule[group.fuse.stage]
    concurrent = [a for a in group.leaves if a in stage.annotations or a in stage.binds]
    if concurrent:
        call = f"fuse({', '.join(a.name for a in group.components)})"
        advice = (
            "leave it serial"
            if group.tiles
            else "fuse loops of constant extents, or leave it serial"
        )
        raise FactorError(
            message(
                stage.name,
                call,
                group.fuse.loc,
                f"the loops fused here are not one perfect nest in this schedule, so "
                f"'{concurrent[0].name}' cannot run in parallel or on blocks; {advice}",
            )
        )
    return nest


def _vars(e: Expr) -> list[Var]:
    return [n for n in walk_expr(e) if isinstance(n, Var)]
