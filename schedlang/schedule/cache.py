"""cache_read and cache_write: new stages that copy a tensor into (or out of) another scope.

Both rewrite the dataflow graph *of the schedule* (the algorithm is immutable): a new compute op
is added, and the ops that read or define the cached tensor are replaced in their stages by
copies that read the cache. As in TE, the IterVars a user holds keep naming the same loops:
readers keep their axes, and cache_write moves the reduce axes to the cache stage.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..ir.expr import Read, Reduce, Var, const
from ..ir.tensor import ComputeOp, IterVar, Range, Tensor
from ..ir.visit import substitute
from . import records as rec
from .cache_outputs import cache_write_outputs, listed_outputs
from .errors import PlacementError, ScopeError, message
from .relayout import relaid
from .rewire import reads_of
from .stage import Stage
from .stage_guards import check_scope

if TYPE_CHECKING:
    from .schedule import Schedule


def _fail(cls: type, stage: str, call: str, loc: str, what: str) -> None:
    raise cls(message(stage, call, loc, what))


def cache_read(s: Schedule, tensor: object, scope: str, readers: object, loc: str) -> Tensor:
    source = s[tensor]
    # The tensor's current op: one output of a multi-output stage is cached on its own.
    read = source.ops[getattr(getattr(tensor, "op", None), "value_index", 0)]
    label = source.name if len(source.ops) == 1 else read.name
    names = ", ".join(getattr(r, "name", str(r)) for r in _listed(readers))
    call = f"cache_read({label}, {scope!r}, [{names}])"
    check_scope(source.name, call, loc, scope)
    reader_stages = [_reader(s, source, read, label, r, call, loc) for r in _listed(readers)]
    if not reader_stages:
        _fail(ScopeError, source.name, call, loc, "give at least one reader stage")
    axes = tuple(
        IterVar(Var(f"ax{k}", "int32", "axis"), Range(const(0), ext), "data")
        for k, ext in enumerate(read.shape)
    )
    body = Read(Tensor(read), tuple(iv.var for iv in axes), read.dtype)
    cache_op = s.made(ComputeOp(s.unique_name(f"{label}.{scope}"), "", axes, (), body))
    cache = s.add_stage(cache_op, after=source)
    cache.scope = scope
    for reader in reader_stages:
        for op in reader.ops:
            if read in [t.op for t in op.input_tensors]:
                s._swap(reader, op, s.made(replace(op, expr=reads_of(read, op.expr, cache_op))))
    names_of = tuple(r.name for r in reader_stages)
    s.records.append(rec.CacheRead(source.name, scope, names_of, cache.name, loc))
    return Tensor(cache_op)


def _listed(readers: object) -> list:
    if readers is None:
        return []
    return list(readers) if isinstance(readers, (list, tuple)) else [readers]


def _reader(
    s: Schedule, source: Stage, read: ComputeOp, label: str, reader: object, call: str, loc: str
) -> Stage:
    stage = s[reader]
    if not any(
        isinstance(op, ComputeOp) and read in [t.op for t in op.input_tensors] for op in stage.ops
    ):
        _fail(
            ScopeError,
            source.name,
            call,
            loc,
            f"'{stage.name}' does not read '{label}'; readers are the stages whose reads "
            "go through the cache",
        )
    return stage


def cache_write(s: Schedule, tensor: object, scope: str, loc: str) -> Tensor | list[Tensor]:
    if isinstance(tensor, (list, tuple)) and tensor:
        names = ", ".join(getattr(t, "name", str(t)) for t in tensor)
        stage = listed_outputs(s, list(tensor), f"cache_write([{names}], {scope!r})", loc)
    else:
        stage = s[tensor]
    call = f"cache_write({stage.name}, {scope!r})"
    check_scope(stage.name, call, loc, scope)
    op = stage.op
    if len(stage.ops) > 1 and (isinstance(tensor, (list, tuple)) or tensor is stage):
        stage._keep_in_scan(call, loc, ScopeError)
        return cache_write_outputs(s, stage, scope, loc)
    if not isinstance(op, ComputeOp):
        what = f"'{stage.name}' is an input: it is not written"
        _fail(PlacementError, stage.name, call, loc, what)
    stage._one_output(ScopeError, call, loc)
    stage._keep_in_scan(call, loc, ScopeError)
    name = s.unique_name(f"{stage.name}.{scope}")
    if stage.scheduled:  # the cache takes the loops' layout (TE's relayout)
        cache_op, index = relaid(stage, name, call, loc)
        cache_op = s.made(cache_op)
    else:
        cache_op, index = s.made(_same_layout(op, name)), tuple(iv.var for iv in op.axis)
    cache = s.add_stage(cache_op, after=None, before=stage)
    cache.scope = scope
    copy = Read(Tensor(cache_op), index, op.dtype)
    s.replace_op(stage, s.made(ComputeOp(op.name, op.tag, op.axis, (), copy)), keep_loops=False)
    s.records.append(rec.CacheWrite(stage.name, scope, cache.name, loc))
    return Tensor(cache_op)


def _same_layout(op: ComputeOp, name: str) -> ComputeOp:
    """The cache op of `op` over axes of its own shape (the reduction moves to it)."""
    axes = tuple(
        IterVar(Var(f"{iv.var.name}.c", "int32", "axis"), iv.dom, "data") for iv in op.axis
    )
    mapping = {}
    for old, new in zip(op.axis, axes):
        mapping[old.var] = new.var
        mapping[old] = new.var
    body = substitute(op.expr, mapping)
    if isinstance(body, Reduce):
        body = Reduce(body.combiner, body.source, op.reduce_axis, body.where, body.dtype)
    return ComputeOp(name, op.tag, axes, op.reduce_axis, body)
