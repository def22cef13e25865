"""``tvm.te.schedule``: the classes TE code checks schedule objects against
(``isinstance(r, tvm.te.schedule.Split)`` over ``s[C].relations``)."""

from __future__ import annotations

from ..ir.extern import ExternBuffer
from ..ir.tensor import IterVar as _IterVar
from ..schedule.axis import Axis
from ..schedule.introspect import IterType
from ..schedule.records import Fuse, Split
from ..schedule.schedule import Schedule, create_schedule
from ..schedule.stage import Stage
from ..schedule.user_intrin import BufferDecl
from .auto_inline import AutoInlineBroadcast, AutoInlineElemWise, AutoInlineInjective
from .infer_bound import InferBound
from .schedule_ops import ScheduleOps


class _LoopClass(type):
    """``isinstance(x, te.schedule.IterVar)``: an op's IterVar, or a loop split or fuse made."""

    def __instancecheck__(cls, value: object) -> bool:
        return isinstance(value, (_IterVar, Axis))


class _SingletonClass(type):
    """``isinstance(r, te.schedule.Singleton)``: the relation ``fuse()`` of no loops made."""

    def __instancecheck__(cls, value: object) -> bool:
        return isinstance(value, Fuse) and not value.axes


class Singleton(metaclass=_SingletonClass):
    """TE's relation of a loop of one iteration (see `_SingletonClass`)."""


class _BufferClass(type):
    """``isinstance(x, te.schedule.Buffer)``: an array an extern stage's function is handed,
    or a buffer declared for an intrinsic."""

    def __instancecheck__(cls, value: object) -> bool:
        return isinstance(value, (ExternBuffer, BufferDecl))


class Buffer(metaclass=_BufferClass):
    """TE's buffer class, for checks (see `_BufferClass`)."""


class IterVar(metaclass=_LoopClass):
    """TE's IterVar as a class: its kinds of loops by TE's numbers (``IterVar.Unrolled``),
    which `Stage.iter_var_attrs` reports."""

    DataPar = IterType.DataPar
    ThreadIndex = IterType.ThreadIndex
    CommReduce = IterType.CommReduce
    Ordered = IterType.Ordered
    DimInfo = IterType.DimInfo
    Unrolled = IterType.Unrolled
    Vectorized = IterType.Vectorized
    Parallelized = IterType.Parallelized
    Tensorized = IterType.Tensorized


__all__ = [
    "AutoInlineBroadcast",
    "AutoInlineElemWise",
    "AutoInlineInjective",
    "Buffer",
    "Fuse",
    "InferBound",
    "IterVar",
    "Schedule",
    "ScheduleOps",
    "Singleton",
    "Split",
    "Stage",
    "create_schedule",
]
