"""``tvm.te.schedule``: the classes TE code checks schedule objects against
(``isinstance(r, tvm.te.schedule.Split)`` over ``s[C].relations``)."""

from __future__ import annotations

from ..ir.tensor import ComputeOp, IterVar
from ..schedule.records import Fuse, Split
from ..schedule.schedule import Schedule, create_schedule
from ..schedule.stage import Stage


def AutoInlineInjective(sch: Schedule) -> None:  # noqa: N802 - TE's name
    """TE's pass that TOPI's schedules start with: every stage that computes without a
    reduction, is not an output and has no primitive applied yet is inlined."""
    scheduled = {getattr(record, "stage", None) for record in sch.records}
    for stage in list(sch.stages):
        op = stage.op
        if (
            isinstance(op, ComputeOp)
            and not op.reduce_axis
            and op not in sch.output_ops
            and stage.name not in scheduled
        ):
            stage.compute_inline()


__all__ = [
    "AutoInlineInjective",
    "Fuse",
    "IterVar",
    "Schedule",
    "Split",
    "Stage",
    "create_schedule",
]
