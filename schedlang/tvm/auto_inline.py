"""``te.schedule.AutoInlineElemWise``, ``AutoInlineBroadcast``, ``AutoInlineInjective``: inline
every stage of a kind that nothing has scheduled yet, as TOPI's schedules do before they tile
what is left."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import entry_point
from ..ir.expr import Read
from ..ir.scan import ScanOp
from ..ir.tensor import ComputeOp, Operation
from ..ir.visit import walk
from ..schedule import records as rec
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage


def _elementwise(op: ComputeOp) -> bool:
    """Every read is at the op's own indices (TE's test: the very axis variables)."""
    own = [iv.var for iv in op.axis]
    return all(
        len(node.indices) == len(own) and all(i is v for i, v in zip(node.indices, own))
        for node in walk(op.expr)
        if isinstance(node, Read)
    )


def _inline(sch: Schedule, kind: Callable[[ComputeOp], bool]) -> None:
    for stage in list(sch.stages):
        op: Operation = stage.op
        if not isinstance(op, ComputeOp) or op.reduce_axis or stage.scheduled:
            continue
        if stage.is_output or not kind(op) or _holds_others(sch, stage):
            continue
        stage.compute_inline()


def _holds_others(sch: Schedule, stage: Stage) -> bool:
    """Whether other stages need the stage's loops or storage: stages computed at its loops,
    or a scan whose rows it writes (its init or update)."""
    for other in sch.stages:
        if isinstance(other.attach, rec.ComputeAt) and other.attach.target == stage.name:
            return True
        if isinstance(other.op, ScanOp):
            parts = [t.op for op in other.ops for t in (op.init, op.update)]
            if any(sch[part] is stage for part in parts):
                return True
    return False


@entry_point
def AutoInlineElemWise(sch: Schedule) -> None:  # noqa: N802 - TE's name
    """Inline the stages that read every tensor at their own indices."""
    _inline(sch, _elementwise)


@entry_point
def AutoInlineBroadcast(sch: Schedule) -> None:  # noqa: N802 - TE's name
    """Inline the stages tagged ``"broadcast"`` (TOPI's broadcasting operators)."""
    _inline(sch, lambda op: op.tag == "broadcast")


@entry_point
def AutoInlineInjective(sch: Schedule) -> None:  # noqa: N802 - TE's name
    """Inline every stage that is not a reduction."""
    _inline(sch, lambda op: True)
