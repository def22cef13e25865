"""``te.schedule.ScheduleOps``: the loop nest of a whole schedule, before a function's
arguments are chosen. schedlang lowers a schedule in one step, so this is the loop nest
lowered over every input and output of the schedule."""

from __future__ import annotations

from .. import lower
from ..errors import entry_point
from ..ir.graph import together
from ..ir.tensor import PlaceholderOp, Tensor
from ..loopir.core.nodes import Stmt
from ..poly.scans import aliases, find_scans
from ..schedule.schedule import Schedule


@entry_point
def ScheduleOps(
    sch: Schedule, dom_map: object = None, debug_keep_trivial_loop: bool = False
) -> Stmt:  # noqa: N802
    """The loop nest of `sch` (`dom_map`, TE's `InferBound` result, is what schedlang derives
    itself while lowering; it is not needed)."""
    in_scans = aliases(find_scans(sch))  # a scan's state is its rows, not an input
    inputs = [
        stage.op.output(0)
        for stage in sch.stages
        if isinstance(stage.op, PlaceholderOp) and stage.op not in in_scans
    ]
    ops = dict.fromkeys(op for root in sch.outputs for op in together(root))
    outputs = [Tensor(op, getattr(op, "value_index", 0)) for op in ops]
    return lower(sch, inputs + outputs).body
