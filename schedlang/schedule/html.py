"""A schedule as HTML for notebooks: its stage graph, and its primitives as replayable Python.

The table has one row per stage, producers before consumers: what the stage computes and
reads, where it is computed (root, inlined, or at a consumer's loop), its memory scope when one
was asked for, its loops in order with their kinds, and the lines of Python that shaped it.
Below it the whole schedule is the text of `describe()`, which replays it. Both come from the
same records (`text.schedule_lines`), so they cannot disagree.
"""

from __future__ import annotations

from ..htmlkit import badge, code_block, escape, fold, page, table
from ..ir.printer import expr_str
from ..ir.tensor import ComputeOp
from . import records as rec
from .stage import Stage
from .text import schedule_lines


def schedule_html(s) -> str:
    """`s` as a self-contained HTML page (see the module docstring)."""
    by_stage: dict[str, list[str]] = {}
    for record, line in schedule_lines(s):
        owner = getattr(record, "cache", None) or getattr(record, "factored", None) or record.stage
        by_stage.setdefault(owner, []).append(line)
    rows = [_row(stage, by_stage.get(stage.name, [])) for stage in s.stages]
    headers = ("stage", "computes", "reads", "computed", "scope", "loops", "primitives")
    outputs = ", ".join(op.name for op in s.output_ops)
    plural = "" if len(s.records) == 1 else "s"
    title = f"Schedule of <code>{escape(outputs)}</code>: {len(s.records)} primitive{plural}"
    python = fold("as Python (replays the schedule)", code_block(s.describe()), open=True)
    return page(title, table(headers, rows) + python)


def _row(stage: Stage, lines: list[str]) -> tuple[str, ...]:
    op = stage.op
    shape = ", ".join(expr_str(n) for n in op.shape)
    kind = "reduction" if isinstance(op, ComputeOp) and op.reduce_axis else "compute"
    if not isinstance(op, ComputeOp):
        kind = "placeholder"
    computes = f"{escape(kind)} <code>{escape(op.dtype)}[{escape(shape)}]</code>"
    reads = ", ".join(escape(t.op.name) for t in op.input_tensors)
    scope = badge(stage.scope) if stage.scope else ""
    primitives = "<br>".join(f"<code>{escape(line)}</code>" for line in lines)
    return (
        f"<b>{escape(stage.name)}</b>",
        computes,
        reads,
        _placement(stage),
        scope,
        _loops(stage) if isinstance(op, ComputeOp) else "",
        primitives,
    )


def _placement(stage: Stage) -> str:
    attach = stage.attach
    if isinstance(attach, rec.ComputeAt):
        return badge(f"at {attach.target} / {attach.axis.name}", "at")
    if isinstance(attach, rec.ComputeInline):
        return badge("inline")
    if isinstance(stage.op, ComputeOp):
        return badge("root")
    return ""


def _loops(stage: Stage) -> str:
    """The stage's loops, outermost first, each with its kind when it is not serial."""
    shown = []
    for axis in stage.leaves:
        kind = stage.binds.get(axis) or stage.annotations.get(axis)
        name = f"<code>{escape(axis.name)}</code>"
        shown.append(name + badge(kind) if kind else name)
    return " ".join(shown)
