"""cache_write of a stage with several outputs (``FL, EL = s.cache_write([F, E], "local")``):
one cache stage computes all of them together, in a buffer each, as the stage did; the stage
becomes one copy per output, in its loops."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..ir.expr import Read, Reduce, Var
from ..ir.tensor import ComputeOp, IterVar, Outputs, Tensor
from ..ir.visit import substitute
from . import records as rec
from .errors import ScopeError, message

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


def listed_outputs(s: Schedule, tensors: list, call: str, loc: str) -> Stage:
    """The stage computing `tensors`, which must be all of its outputs."""
    stage = s[tensors[0]]
    # by output index: a cache_read may have given the stage new ops for the ones the user holds
    given = {getattr(getattr(t, "op", t), "value_index", 0) for t in tensors}
    if any(s[t] is not stage for t in tensors) or given != set(range(len(stage.ops))):
        names = ", ".join(op.name for op in stage.ops)
        raise ScopeError(
            message(
                stage.name,
                call,
                loc,
                f"the tensors cached together are all the outputs of one stage ({names}); "
                "other tensors are cached one at a time",
            )
        )
    return stage


def cache_write_outputs(s: Schedule, stage: Stage, scope: str, loc: str) -> list[Tensor]:
    """The cache stage of multi-output `stage`, which must have no primitive yet."""
    call = f"cache_write({stage.name}, {scope!r})"
    if stage.scheduled:
        raise ScopeError(
            message(
                stage.name,
                call,
                loc,
                f"'{stage.name}' computes several outputs and already has primitives; call "
                "cache_write before scheduling it (its loops move to the cache stage)",
            )
        )
    first = stage.op
    axes = tuple(
        IterVar(Var(f"{iv.var.name}.c", "int32", "axis"), iv.dom, "data") for iv in first.axis
    )
    name = s.unique_name(f"{stage.name}.{scope}", suffix=".v0")
    group = Outputs(name)
    group.ops = tuple(
        s.made(_cached(op, axes, group, k, f"{name}.v{k}")) for k, op in enumerate(stage.ops)
    )
    cache = s.add_stage(group.ops[0], after=None, before=stage)
    cache.ops = group.ops
    s._by_op.update(dict.fromkeys(group.ops, cache))
    cache.scope = scope
    old = stage.ops
    copies = tuple(
        s.made(
            ComputeOp(
                op.name,
                op.tag,
                op.axis,
                (),
                Read(Tensor(cached, k), tuple(iv.var for iv in op.axis), op.dtype),
                op.outputs,
                k,
                op.attrs,
            )
        )
        for k, (op, cached) in enumerate(zip(old, group.ops))
    )
    stage._adopt(copies[0])  # the loops start afresh, over the copies' axes
    stage.ops = old
    for was, copy in zip(old, copies):
        s._swap(stage, was, copy)
    s.records.append(rec.CacheWrite(stage.name, scope, cache.name, loc))
    return [Tensor(op, k) for k, op in enumerate(group.ops)]


def _cached(op: ComputeOp, axes: tuple, group: Outputs, k: int, name: str) -> ComputeOp:
    mapping: dict = {}
    for old, new in zip(op.axis, axes):
        mapping[old.var] = new.var
        mapping[old] = new.var
    body = substitute(op.expr, mapping)
    if isinstance(body, Reduce):
        body = replace(body, axis=op.reduce_axis)
    return ComputeOp(name, op.tag, axes, op.reduce_axis, body, group, k)
