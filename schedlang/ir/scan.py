"""Recurrences over a leading time axis (TE's ``te.scan``): the values at step t come from the
values at earlier steps.

``S = sl.scan(init, update, state)`` makes a tensor of `state`'s shape whose first
``init.shape[0]`` rows are `init` and whose row t after them is ``update[t, ...]``, where
`update` reads `state` (a placeholder standing for `S` itself) at earlier steps:
``update = sl.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i])`` is a cumulative sum.
Several states step together: give lists, and get one tensor per state.

`S` has no loops of its own: its rows are written in place by the stages of `init` and
`update` (and the stages between the state and the update, the scan's *body*), which are
scheduled as any stages are. The polyhedral layer checks that the schedule computes each step
after the steps it reads (`poly.scans`). The init's rows must fit the state: more of them than
the state has steps is refused here when both are constants, and otherwise when the scan is
lowered or called (`check_rows`, `loopir.core.scan_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import AlgorithmError, entry_point
from .expr import Const, Expr
from .graph import post_order
from .printer import expr_str
from .tensor import ComputeOp, Operation, Outputs, PlaceholderOp, Tensor


@dataclass(frozen=True, slots=True, eq=False)
class ScanOp(Operation):
    """The tensor of one state of a scan (see the module)."""

    name: str
    shape: tuple[Expr, ...]
    dtype: str
    init: Tensor
    update: Tensor
    state: Tensor  # the placeholder that stands for this tensor in the update
    outputs: Outputs | None = None  # the scan's other states, stepped together
    value_index: int = 0
    # The tensors given as the scan's inputs: the stages reading them on the way to the
    # update are part of the body too (TE's body: every op between the update and the
    # states or inputs), so they run the steps after the init's rows only.
    inputs: tuple[Tensor, ...] = ()
    # (axis, condition) over the update's axes and the axis: a step of a row may change the
    # state only where the condition holds for some value of the axis; at any other step the
    # update leaves the row as it was, and a schedule may skip it (`online`'s masks: the key
    # blocks a row never reaches). None: every step may.
    live: tuple | None = None

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        return (self.init, self.update)

    @property
    def scan_name(self) -> str:
        """The name given to `sl.scan` (its states are named after it)."""
        return self.name if self.outputs is None else self.outputs.name

    def group_inputs(self) -> list[Tensor]:
        """The inputs of all the scan's states in the order their stages must run: every
        init, then the updates, an update whose steps read another's state after that one
        (`graph.post_order` asks)."""
        group = (self,) if self.outputs is None else self.outputs.ops
        states = {op.state.op: op for op in group}
        ordered: list[ScanOp] = []
        pending = list(group)
        while pending:  # updates reading each other's states keep their given order
            ready = [
                op
                for op in pending
                if not any(
                    states[s] in pending and states[s] is not op for s in _states_read(op, states)
                )
            ]
            chosen = ready[0] if ready else pending[0]
            ordered.append(chosen)
            pending.remove(chosen)
        return [op.init for op in group] + [op.update for op in ordered]


def _listed(value: object) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _same(a: Expr, b: Expr) -> bool:
    return a is b or expr_str(a) == expr_str(b)


@entry_point
def scan(
    init: object, update: object, state: object, inputs: object = None, name: str = "scan"
) -> Tensor | list[Tensor]:
    """The recurrence whose first rows are `init` and whose later rows are `update`, which
    reads `state` (a placeholder for the result) at earlier steps. Lists of each give one
    tensor per state, stepped together. `inputs` (tensors the update reads besides the
    states, as in TE) make the stages that read them on the way to the update part of the
    scan's body: they are computed for the steps after the init's rows only, so they may
    read ``X[t - 1]`` of an input with a step fewer."""
    inits, updates, states = _listed(init), _listed(update), _listed(state)
    if not (len(inits) == len(updates) == len(states)) or not inits:
        raise AlgorithmError(
            f"scan '{name}': give one init, one update and one state per state "
            f"(got {len(inits)}, {len(updates)} and {len(states)})"
        )
    for t in [*inits, *updates, *states, *_listed(inputs or [])]:
        if not isinstance(t, Tensor):
            raise AlgorithmError(f"scan '{name}': {t!r} is not a tensor")
    state_ops = [s.op for s in states]
    for k, (i, u, s) in enumerate(zip(inits, updates, states)):
        _check_state(name, k, i, u, s, state_ops)
    if not all(_same(i.shape[0], inits[0].shape[0]) for i in inits):
        raise AlgorithmError(f"scan '{name}': every init has the same number of rows")
    rows, steps = inits[0].shape[0], states[0].shape[0]
    if isinstance(rows, Const) and isinstance(steps, Const) and rows.value > steps.value:
        raise AlgorithmError(
            rows_past_steps(name, inits[0].name, states[0].name, rows.value, steps.value)
        )
    outputs = Outputs(name) if len(states) > 1 else None
    ops = tuple(
        ScanOp(
            name if outputs is None else f"{name}.v{k}",
            tuple(s.shape),
            s.dtype,
            i,
            u,
            s,
            outputs,
            k,
            tuple(_listed(inputs or [])),
        )
        for k, (i, u, s) in enumerate(zip(inits, updates, states))
    )
    if outputs is None:
        return Tensor(ops[0])
    outputs.ops = ops
    return [Tensor(op, k) for k, op in enumerate(ops)]


def _check_state(name: str, k: int, init: Tensor, update: Tensor, state: Tensor, states) -> None:
    what = f"scan '{name}', state {k} ('{state.name}')"
    if not isinstance(init.op, ComputeOp):
        raise AlgorithmError(
            f"{what}: the init '{init.name}' must be a compute (sl.compute of the first rows, "
            "e.g. lambda _, i: X[0, i]), which writes the result's first rows"
        )
    if type(state.op) is not PlaceholderOp:
        raise AlgorithmError(
            f"{what}: the state must be a placeholder (sl.placeholder of the result's shape), "
            f"not '{state.name}'"
        )
    if not isinstance(update.op, ComputeOp):
        raise AlgorithmError(f"{what}: the update '{update.name}' must be a compute")
    if len(update.shape) != len(state.shape) or not all(
        _same(a, b) for a, b in zip(update.shape, state.shape)
    ):
        raise AlgorithmError(
            f"{what}: the update '{update.name}' has shape {_shape_str(update)} and the state "
            f"{_shape_str(state)}; they must be the same"
        )
    if len(init.shape) != len(state.shape) or not all(
        _same(a, b) for a, b in zip(init.shape[1:], state.shape[1:])
    ):
        raise AlgorithmError(
            f"{what}: the init '{init.name}' has shape {_shape_str(init)}; it must be the "
            f"state's {_shape_str(state)} but for its first dimension (the steps it gives)"
        )
    if not (init.dtype == update.dtype == state.dtype):
        raise AlgorithmError(
            f"{what}: the init, update and state must have one dtype (got {init.dtype}, "
            f"{update.dtype} and {state.dtype})"
        )
    if any(op in states for op in post_order([init.op])):
        raise AlgorithmError(f"{what}: the init '{init.name}' reads a state; only updates do")


def rows_past_steps(
    scan: str, init: str, state: str, rows: object, steps: object, extent: str = "", sizes: str = ""
) -> str:
    """The message for an init that gives more rows than the state has steps (its rows would
    be written past the end of the result): `steps` rows, `extent` the state's symbolic
    extent and `sizes` the sizes that gave it, where it has one."""
    noun = "row" if steps == 1 else "rows"
    if extent:
        where = f" ({sizes})"
        fix = f"call it with sizes where {extent} >= {rows}, or give fewer init rows"
    else:
        where = ""
        fix = f"give the state at least {rows} rows, or the init fewer"
    return (
        f"scan '{scan}': the init '{init}' gives {rows} rows, but the state '{state}' has "
        f"{steps} {noun} along its steps{where}, so the init's rows would be written past its "
        f"end; {fix}"
    )


def check_rows(op: ScanOp, rows: int, steps: int, sizes: str) -> None:
    """Raise AlgorithmError where the scan of `op` gives more `rows` in its init than its
    state has `steps` (at the `sizes` that give them)."""
    if rows <= steps:
        return
    extent = op.shape[0]
    symbolic = "" if isinstance(extent, Const) else expr_str(extent)
    raise AlgorithmError(
        rows_past_steps(op.scan_name, op.init.name, op.state.name, rows, steps, symbolic, sizes)
    )


def _states_read(op: ScanOp, states: dict[Operation, ScanOp]) -> set[Operation]:
    """The states `op`'s update reads, directly or through the stages it reads."""
    return {o for o in post_order([op.update.op]) if o in states}


def _shape_str(t: Tensor) -> str:
    return "(" + ", ".join(expr_str(e) for e in t.shape) + ")"


def body_sources(scan_ops: tuple[ScanOp, ...] | list[ScanOp]) -> set[Operation]:
    """The ops whose readers (on the way to an update) a scan computes step by step: its
    states, and the ops of its inputs."""
    return {op.state.op for op in scan_ops} | {t.op for op in scan_ops for t in op.inputs}


def body_ops(updates: list[Operation], states: set[Operation]) -> list[Operation]:
    """The ops a scan computes step by step, in evaluation order: the `updates` and the ops
    they read that read one of the `states` (or inputs, `body_sources`), directly or not."""
    order = post_order(updates)
    reads_state: set[Operation] = set()
    for op in order:
        if any(t.op in states or t.op in reads_state for t in op.input_tensors):
            reads_state.add(op)
    return [op for op in order if op in reads_state or op in updates]
