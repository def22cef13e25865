"""A schedule printed as the Python that builds it."""

from __future__ import annotations

import re

from . import records as rec
from .axis import Axis


def _ident(axis: Axis) -> str:
    return re.sub(r"\W", "_", f"{axis.stage}_{axis.name}")


def schedule_text(s) -> str:
    outputs = ", ".join(op.name for op in s.output_ops)
    lines = [f"s = sl.create_schedule([{outputs}])"]
    roots: dict[Axis, str] = {}
    for stage in s.stages:
        n_data = len(getattr(stage.op, "axis", ()))
        for k, axis in enumerate(stage.root_axes):
            field = f"axis[{k}]" if k < n_data else f"reduce_axis[{k - n_data}]"
            roots[axis] = f"s[{stage.name}].op.{field}"

    def ref(axis: Axis) -> str:
        return roots.get(axis, _ident(axis))

    for r in s.records:
        st = f"s[{r.stage}]"
        if isinstance(r, rec.Split):
            amount = f"factor={r.factor}" if r.nparts is None else f"nparts={r.nparts}"
            lines.append(
                f"{_ident(r.outer)}, {_ident(r.inner)} = {st}.split({ref(r.parent)}, {amount})"
            )
        elif isinstance(r, rec.Fuse):
            lines.append(f"{_ident(r.fused)} = {st}.fuse({', '.join(ref(a) for a in r.axes)})")
        elif isinstance(r, rec.Reorder):
            lines.append(f"{st}.reorder({', '.join(ref(a) for a in r.order)})")
        elif isinstance(r, rec.Annotate):
            lines.append(f"{st}.{r.kind}({ref(r.axis)})")
        elif isinstance(r, rec.Bind):
            lines.append(f'{st}.bind({ref(r.axis)}, sl.thread_axis("{r.tag}"))')
        elif isinstance(r, rec.ComputeAt):
            lines.append(f"{st}.compute_at(s[{r.target}], {ref(r.axis)})")
        elif isinstance(r, rec.ComputeInline):
            lines.append(f"{st}.compute_inline()")
        elif isinstance(r, rec.ComputeRoot):
            lines.append(f"{st}.compute_root()")
    return "\n".join(lines)
