"""Checks the primitives of a stage share: the scope a primitive names, whether one stage
reads another, and the refusals for a stage whose op is not a plain compute (several outputs
computed together; the init or update of a scan, which writes the scan's rows in place)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.scan import ScanOp
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
            f"{primitive} applies to a stage with one output",
        )


def depends_on(consumer: Stage, producer: Stage) -> bool:
    """Does `consumer` read `producer`, directly or through other computes?"""
    pending, seen = list(consumer.ops), set()
    while pending:
        op = pending.pop()
        for tensor in op.input_tensors:
            if tensor.op in producer.ops:
                return True
            if id(tensor.op) not in seen:
                seen.add(id(tensor.op))
                pending.append(tensor.op)
    return False


def check_scope(stage: str, call: str, loc: str, scope: object) -> None:
    if scope not in SCOPES:
        raise ScopeError(
            message(stage, call, loc, f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")
        )
