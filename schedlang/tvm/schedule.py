"""``tvm.te.schedule``: the classes TE code checks schedule objects against
(``isinstance(r, tvm.te.schedule.Split)`` over ``s[C].relations``)."""

from __future__ import annotations

from ..ir.tensor import IterVar
from ..schedule.records import Fuse, Split
from ..schedule.schedule import Schedule, create_schedule
from ..schedule.stage import Stage
from .infer_bound import InferBound

__all__ = ["Fuse", "InferBound", "IterVar", "Schedule", "Split", "Stage", "create_schedule"]
