"""TOPI's generic schedule of injective operators (element-wise, broadcasting, data
movement): the injective stages inlined into the outputs, each output's loops fused."""

from __future__ import annotations

from ... import te
from .default import default_schedule, fuse_all


def schedule_injective_from_existing(sch, out):
    """`sch` with the loops of `out` fused into one."""
    return fuse_all(sch, out)


def schedule_injective(outs):
    s = default_schedule(outs, auto_inline=False)
    te.schedule.AutoInlineInjective(s)
    for out in [outs] if isinstance(outs, te.Tensor) else outs:
        schedule_injective_from_existing(s, out)
    return s


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
