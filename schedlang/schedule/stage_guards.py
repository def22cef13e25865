"""Checks the primitives of a stage share: the scope a primitive names, whether one stage
reads another, and the refusals for a stage whose op is not a plain compute (several outputs
computed together; the init or update of a scan, which writes the scan's rows in place)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError, warn
from ..ir.scan import ScanOp, body_ops
from . import records as rec
from .errors import ScopeError, message
from .intrin import FRAGMENT_SCOPES

if TYPE_CHECKING:
    from .stage import Stage

SCOPES = ("global", "shared", "local", *FRAGMENT_SCOPES)


def keep_in_scan(stage: Stage, call: str, loc: str, cls: type) -> None:
    """Refuse a primitive that would give storage of its own to a stage whose values are
    rows of a scan (its init or update), which it writes in place."""
    for scan in stage.schedule.stages:
        if not isinstance(scan.op, ScanOp):
            continue
        for op in scan.ops:
            if stage.schedule._by_op.get(op.init.op) is stage:
                role = "init"
            elif stage.schedule._by_op.get(op.update.op) is stage:
                role = "update"
            else:
                continue
            stage._fail(
                cls,
                call,
                loc,
                f"'{stage.name}' is the {role} of the scan '{scan.name}' and writes its rows "
                f"in place; {call.split('(')[0]} would give it storage of its own. Schedule "
                "its loops (split, reorder, bind, ...), and place the stages it reads",
            )


def current_op(schedule, tensor) -> object:
    """The schedule's op of `tensor` now (a cache_read rewires ops), one output of its stage."""
    return schedule[tensor.op].ops[getattr(tensor.op, "value_index", 0)]


def scan_stages(scan: Stage) -> list[str]:
    """The stages that compute a scan's rows: its inits, then its body in step order (the
    updates and the stages between its states and its updates)."""
    schedule = scan.schedule
    inits = [schedule[current_op(schedule, op.init)].name for op in scan.ops]
    updates = [current_op(schedule, op.update) for op in scan.ops]
    body = set(body_ops(updates, {op.state.op for op in scan.ops}))
    return inits + [s.name for s in schedule.stages if any(o in body for o in s.ops)]


def step_mates(stage: Stage) -> list[Stage]:
    """The stages whose loop `stage`'s first loop is: the body stages of the scan whose
    steps it computes (they share one loop over the steps; the inits have loops of their
    own), else `stage` alone."""
    schedule = stage.schedule
    for scan in schedule.stages:
        if not isinstance(scan.op, ScanOp):
            continue
        inits = {schedule[current_op(schedule, op.init)].name for op in scan.ops}
        body = [name for name in scan_stages(scan) if name not in inits]
        if stage.name in body:
            return [schedule[name] for name in body]
    return [stage]


def one_output(stage: Stage, cls: type, call: str, loc: str) -> None:
    """Refuse a primitive that makes or replaces one op on a multi-output stage."""
    if len(stage.ops) > 1:
        names = ", ".join(op.name for op in stage.ops)
        primitive = call.split("(")[0]
        stage._fail(
            cls,
            call,
            loc,
            f"'{stage.name}' computes {len(stage.ops)} outputs together ({names}); "
            f"{primitive} applies to a stage with one output: write each output as a compute "
            f"of its own (a reduction each, over the same axes) and {primitive} them one by "
            "one (s.online fuses a maximum and the sums taken against it into one pass)",
        )


def depends_on(consumer: Stage, producer: Stage) -> bool:
    """Does `consumer` read `producer`, directly or through other computes? A stage read
    through a tensor a cache_read has rewired is followed to its op now."""
    by_op = consumer.schedule._by_op
    pending, seen = list(consumer.ops), set()
    while pending:
        op = pending.pop()
        for tensor in op.input_tensors:
            stage = by_op.get(tensor.op)
            for read in stage.ops if stage is not None else (tensor.op,):
                if read in producer.ops:
                    return True
                if id(read) not in seen:
                    seen.add(id(read))
                    pending.append(read)
    return False


def check_scope(stage: str, call: str, loc: str, scope: object) -> None:
    if scope not in SCOPES:
        raise ScopeError(
            message(stage, call, loc, f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")
        )


def warn_replaced(stage: Stage, call: str, loc: str) -> None:
    """Say that `call` replaces the stage's compute_inline by a compute_at, or the reverse.
    A stage has one placement and the last one given decides, as in TE (whose compute_at,
    compute_inline and compute_root each set the stage's attach type) and Halide; between
    these two the change is seldom meant, so it is said. compute_root, the way back to the
    default, and a compute_at that moves the stage to another loop say nothing."""
    earlier = stage.attach
    if stage.schedule._replaying is not None or earlier is None:
        return  # a replay (undo, copy) applies again what was said when it was first applied
    if isinstance(earlier, rec.ComputeInline) and call.startswith("compute_at("):
        before = "compute_inline()"
    elif isinstance(earlier, rec.ComputeAt) and call == "compute_inline()":
        before = f"compute_at(s[{earlier.target}], {earlier.axis.name})"
    else:
        return
    where = f" at {earlier.loc}" if earlier.loc else ""
    warn(
        message(
            stage.name,
            call,
            loc,
            f"replaces {before}{where}: a stage has one placement and the last one given "
            "decides (as in TE); s.undo() takes this one back",
        )
    )


def check_live(stage: Stage, call: str, loc: str) -> None:
    """Refuse a primitive on a Stage object that `undo` took out of its schedule (with the
    primitive that added it): its record would name a stage the schedule does not have."""
    if stage.schedule.holds(stage):
        return
    raise ScheduleError(
        message(
            stage.name,
            call,
            loc,
            "this stage is no longer part of the schedule: s.undo() took back the primitive "
            "that added it; apply that primitive again, and schedule the stage it gives",
        )
    )


def fuses_data(stage: Stage, axis) -> bool:
    """Whether the loop `axis` runs data loops fused with reduce loops (directly, or split
    from or fused with such a loop): each of its iterations updates an element of its own."""
    for r in stage.relations:
        if isinstance(r, rec.Split) and axis in (r.outer, r.inner):
            return fuses_data(stage, r.parent)
        if isinstance(r, rec.Fuse) and axis == r.fused:
            kinds = {a.kind for a in r.axes}
            return len(kinds) > 1 or any(fuses_data(stage, a) for a in r.axes)
    return False
