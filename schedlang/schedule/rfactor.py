"""rfactor: turn one reduce loop of a stage into a data axis of a new stage (TE's semantics).

For ``B[i] = sum(A[i, k], k)`` with ``k`` split into ``(ko, ki)``, ``rfactor(B, ki)`` gives::

    B.rf[ki, i] = sum(A[i, ko * f + ki], ko)    # for ko * f + ki < n: the tail is guarded
    B[i]        = sum(B.rf[ki.v, i], ki.v)

so the partial sums over ``ki`` are independent and can be computed in parallel (or by threads),
then combined. The factored stage reduces over the remaining reduce leaves, in their order, as
TE's: a reduce axis that was neither split nor fused is the op's own IterVar, a loop split off
is an IterVar of that loop's variable (``BF.op.body[0].axis[1].var == ko.var``). Both stages
start with fresh loops, so splits and fuses of the data axes made before are dropped, as TE
drops them (its reduction stage starts afresh, the factored one with no loops split).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.expr import Const, Expr, Read, Reduce, Var, const, logical, select
from ..ir.integers import as_int
from ..ir.tensor import ComputeOp, IterVar, Range, Tensor
from ..ir.visit import by_element, substitute
from . import records as rec
from .errors import RFactorError, message
from .relations import leaf_form

if TYPE_CHECKING:
    from .schedule import Schedule


def rfactor(s: Schedule, tensor: object, axis: object, factor_axis: int, loc: str) -> Tensor:
    stage = s[tensor]
    call = f"rfactor({stage.name}, {getattr(axis, 'name', axis)}, factor_axis={factor_axis})"

    def fail(what: str) -> None:
        raise RFactorError(message(stage.name, call, loc, what))

    op = stage.op
    if not isinstance(op, ComputeOp) or not isinstance(op.expr, Reduce):
        fail(f"'{stage.name}' is not a reduction")
    if by_element(op.expr.combiner):
        fail(
            f"'{stage.name}' reduces with '{op.expr.combiner.name}', whose identity or "
            "combination uses the compute's indices; the partial results rfactor makes would "
            "each start from that identity, so it needs a reducer of constants"
        )
    stage._one_output(RFactorError, call, loc)
    stage._keep_in_scan(call, loc, RFactorError)
    chosen = stage._axis(axis, call, loc)
    if chosen.kind != "reduce":
        fail(f"'{chosen.name}' is a data axis; rfactor factors a reduce loop")
    mixed = any(
        isinstance(r, rec.Fuse) and len({a.kind for a in r.axes}) > 1 for r in stage.relations
    )
    if mixed or stage.annotations or stage.binds or stage.attach is not None:
        fail(
            f"'{stage.name}' already has primitives other than splits and fuses of its reduce "
            "axes (or of its data axes, which rfactor drops); call rfactor first, then "
            "schedule both stages"
        )
    if as_int(factor_axis) is None:
        fail(f"factor_axis must be an integer, got {factor_axis!r}")
    factor_axis = as_int(factor_axis)
    if not 0 <= factor_axis <= len(op.axis):
        fail(f"factor_axis must be in [0, {len(op.axis)}], got {factor_axis}")
    for r in stage.relations:
        if isinstance(r, rec.Split) and r.nparts is not None and stage.extents[r.parent] is None:
            fail(
                f"'{r.parent.name}' has a symbolic extent, so its split into {r.nparts} parts "
                "has no constant part size to factor; split it by factor= instead"
            )
        if isinstance(r, rec.Fuse) and any(stage.extents[a] is None for a in r.axes[1:]):
            fail(
                f"a loop fused into '{r.fused.name}' after the first has a symbolic extent; "
                "only the outermost fused loop may: split it by a constant factor first"
            )
    reduce_leaves = [a for a in stage.leaves if a.kind == "reduce"]
    form = leaf_form(stage, reduce_leaves, "reduce")
    body = op.expr
    data = tuple(IterVar(Var(iv.var.name, "int32", "axis"), iv.dom, "data") for iv in op.axis)
    factored = IterVar(
        Var(chosen.name, "int32", "axis"), Range(const(0), form.extents[chosen]), "data"
    )
    mapping: dict = {}
    for old, new in zip(op.axis, data):
        mapping[old] = mapping[old.var] = new.var
    kept = {a for a in reduce_leaves if a in stage.root_axes and a != chosen}
    for a, root in form.roots.items():
        if a in kept:  # the op's own reduce axis, left as it is
            continue
        iv = stage.itervars[a]
        value = substitute(root, {form.leaf_vars[chosen]: factored.var})
        if not (isinstance(iv.dom.min, Const) and iv.dom.min.value == 0):
            value = value + iv.dom.min
        mapping[iv] = mapping[iv.var] = value
    # TE's order: the op's own reduce axes left as they are, then the loops split or fused
    # from the others, as the stage ordered them
    remaining = tuple(stage.itervars[a] for a in stage.root_axes if a in kept) + tuple(
        IterVar(form.leaf_vars[a], Range(const(0), form.extents[a]), "reduce")
        for a in reduce_leaves
        if a != chosen and a not in kept
    )
    source = substitute(body.source, mapping)
    conditions = [substitute(g, {form.leaf_vars[chosen]: factored.var}) for g in form.guards]
    if body.where is not None:
        conditions.append(substitute(body.where, mapping))
    where = logical("and", conditions) if conditions else None
    if remaining:
        rf_body: Expr = Reduce(body.combiner, source, remaining, where, body.dtype)
    else:
        rf_body = source if where is None else select(where, source, body.combiner.identity)
    rf_axes = data[:factor_axis] + (factored,) + data[factor_axis:]
    rf_name = s.unique_name(f"{stage.name}.rf")
    rf_op = s.made(ComputeOp(rf_name, op.tag, rf_axes, remaining, rf_body))
    rf_stage = s.add_stage(rf_op, before=stage)
    combine = IterVar(Var(f"{chosen.name}.v", "int32", "reduce"), factored.dom, "reduce")
    indices = tuple(iv.var for iv in op.axis)
    indices = indices[:factor_axis] + (combine.var,) + indices[factor_axis:]
    read = Read(Tensor(rf_op), indices, op.dtype)
    total = Reduce(body.combiner, read, (combine,), None, body.dtype)
    combined = s.made(ComputeOp(op.name, op.tag, op.axis, (combine,), total))
    s.replace_op(stage, combined, keep_loops=False)
    s.records.append(rec.RFactor(stage.name, chosen, factor_axis, rf_stage.name, loc))
    return Tensor(rf_op)
