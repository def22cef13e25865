"""AutoTVM's ``register_topi_compute`` and ``register_topi_schedule``: TOPI's tunable computes
and schedules take their configuration as a first argument, which the decorators supply.

The compute's wrapper names its call by a *workload* (the task's name and its arguments, a
tensor as its shape and dtype), asks the dispatch context for that workload's configuration,
and records the workload in the output op's ``attrs`` (TE's ``attrs``, which change nothing
computed). The schedule's wrapper finds the workload among the ops it is given and asks for
the same configuration, so that the schedule reads the tiles the compute was written for.
"""

from __future__ import annotations

import dataclasses
import functools
from types import MappingProxyType

from ....errors import entry_point
from ....ir.expr import Const, Expr
from ....ir.tensor import ComputeOp, Tensor
from ....tune.knobs import TuneError
from ...target import Target
from .dispatcher import DispatchContext


def args_to_workload(args, task_name: str | None = None) -> tuple:
    """`args` as a hashable workload, led by `task_name` when given: a tensor is
    ``("TENSOR", shape, dtype)``, a constant its value, a list a tuple."""
    encoded = tuple(_encode(a) for a in args)
    return encoded if task_name is None else (task_name, *encoded)


def _encode(x: object) -> object:
    if isinstance(x, Tensor):
        return ("TENSOR", tuple(_encode(d) for d in x.shape), x.dtype)
    if isinstance(x, (list, tuple)):
        return tuple(_encode(a) for a in x)
    if isinstance(x, Const):
        return x.value
    if x is None or isinstance(x, (str, int, float, Expr)):
        return x
    raise TuneError(f"a TOPI workload cannot hold argument {x!r} of type {type(x).__name__}")


def _with_workload(tensor: Tensor, workload: tuple) -> Tensor:
    """`tensor` computed by a copy of its op whose ``attrs`` hold `workload`."""
    op = tensor.op
    if not isinstance(op, ComputeOp) or op.outputs is not None:
        raise TuneError(
            f"a TOPI compute registered for AutoTVM must return one tensor of a single-output "
            f"compute, to carry its workload; '{op.name}' is not one"
        )
    attrs = MappingProxyType({**op.attrs, "workload": workload})
    return Tensor(dataclasses.replace(op, attrs=attrs))


def register_topi_compute(task_name: str, func=None):
    """``@autotvm.register_topi_compute("dense_nopack.x86")``: the compute is called with its
    workload's configuration before its own arguments."""

    def decorate(compute):
        @functools.wraps(compute)
        @entry_point
        def wrapper(*args, **kwargs):
            if kwargs:
                raise TuneError(
                    f"{task_name}: pass the arguments of a TOPI template by position (its "
                    f"workload is made of them), not {sorted(kwargs)} by name"
                )
            workload = args_to_workload(args, task_name)
            cfg = DispatchContext.current.query(Target.current(), workload)
            return _with_workload(compute(cfg, *args), workload)

        return wrapper

    return decorate(func) if func is not None else decorate


def register_topi_schedule(task_name: str, func=None):
    """``@autotvm.register_topi_schedule("dense_nopack.x86")``: the schedule is called with the
    configuration of the workload its compute recorded, before the outputs."""

    def decorate(schedule):
        @functools.wraps(schedule)
        @entry_point
        def wrapper(outs, *args, **kwargs):
            workload = get_workload(outs, task_name)
            if workload is None:
                raise TuneError(
                    f"cannot find TOPI workload {task_name} among the outputs' ops: compute "
                    "them with the function registered by register_topi_compute"
                )
            cfg = DispatchContext.current.query(Target.current(), workload)
            return schedule(cfg, outs, *args, **kwargs)

        return wrapper

    return decorate(func) if func is not None else decorate


def get_workload(outs, task_name: str | None = None) -> tuple | None:
    """The workload recorded on an op that `outs` are computed from (of `task_name` when
    given), the inputs searched first."""
    visited = set()

    def search(tensors) -> tuple | None:
        for t in tensors:
            if t.op in visited:
                continue
            visited.add(t.op)
            found = search(t.op.input_tensors)
            if found is not None:
                return found
            workload = getattr(t.op, "attrs", {}).get("workload")
            if workload is not None and (task_name is None or workload[0] == task_name):
                return workload
        return None

    return search([outs] if isinstance(outs, Tensor) else outs)
