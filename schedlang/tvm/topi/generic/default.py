"""TOPI's default CPU schedule, which its generic schedules return: TE's default schedule of
the outputs, optionally with every injective stage inlined and the first output's loops fused
into one."""

from __future__ import annotations

from ....errors import LoweringError
from ... import te
from ...target import Target


def default_schedule(outs, auto_inline: bool):
    """The schedule of `outs` (a tensor or a list) for the current target, which must be the
    CPU (``with tvm.target.Target("llvm")``), as TOPI's generic schedules require."""
    target = Target.current(allow_none=False)
    if target.kind.name not in ("llvm", "c"):
        raise LoweringError(
            f"TOPI's generic schedules are for the CPU ('llvm'), not for target '{target}'"
        )
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([t.op for t in outs])
    if auto_inline:
        te.schedule.AutoInlineInjective(s)
        fuse_all(s, outs[0])
    return s


def fuse_all(s, out):
    """The loops of `out` fused into one (a 0-d output has none to fuse)."""
    if out.op.axis:
        s[out].fuse(*out.op.axis)
    return s
