"""The schedule of a whole algorithm: one stage per op, and the records applied, in order."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ScheduleError
from ..ir.graph import post_order
from ..ir.tensor import IterVar, Operation, Tensor
from . import records as rec
from .axis import Axis, ThreadAxis
from .stage import HARDWARE_TAGS, Stage


class Schedule:
    """Stages for every op the outputs depend on. ``s[T]`` is the stage of tensor (or op) `T`."""

    def __init__(self, outputs: Iterable[Operation]) -> None:
        self.output_ops: tuple[Operation, ...] = tuple(outputs)
        self.records: list[object] = []
        self.stages: list[Stage] = []
        self._by_op: dict[Operation, Stage] = {}
        self._by_name: dict[str, Stage] = {}
        for op in post_order(self.output_ops):
            name = op.name
            suffix = 1
            while name in self._by_name:
                name = f"{op.name}_{suffix}"
                suffix += 1
            stage = Stage(self, op, name)
            self.stages.append(stage)
            self._by_op[op] = stage
            self._by_name[name] = stage

    def __getitem__(self, key: object) -> Stage:
        if isinstance(key, Tensor):
            key = key.op
        if isinstance(key, Stage) and key.schedule is self:
            return key
        if isinstance(key, str) and key in self._by_name:
            return self._by_name[key]
        if isinstance(key, Operation) and key in self._by_op:
            return self._by_op[key]
        name = getattr(key, "name", key)
        raise ScheduleError(
            f"'{name}' is not part of this schedule; its stages are "
            f"{', '.join(s.name for s in self.stages)}"
        )

    def _owner_of_itervar(self, iv: IterVar) -> str | None:
        for stage in self.stages:
            if iv in stage._by_itervar:
                return stage.name
        return None

    def _attach_chain(self, stage: Stage) -> list[str]:
        """Names of the stages `stage` is (transitively) computed inside."""
        chain = []
        while isinstance(stage.attach, rec.ComputeAt):
            stage = self._by_name[stage.attach.target]
            chain.append(stage.name)
        return chain

    def copy(self) -> Schedule:
        """An independent schedule with the same records (axes held by the user stay valid)."""
        return replay(self.output_ops, self.records)

    def describe(self) -> str:
        """The schedule as Python that replays it (``s`` and the tensors by name in scope)."""
        from .text import schedule_text

        return schedule_text(self)

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        outputs = ", ".join(op.name for op in self.output_ops)
        return f"<Schedule of {outputs}: {len(self.records)} primitives>"


def create_schedule(outputs: object) -> Schedule:
    """A schedule with every stage computed at root, in its natural loop order."""
    items = outputs if isinstance(outputs, (list, tuple)) else [outputs]
    ops = []
    for item in items:
        op = item.op if isinstance(item, Tensor) else item
        if not isinstance(op, Operation):
            raise ScheduleError(f"create_schedule takes tensors or ops, not {item!r}")
        ops.append(op)
    return Schedule(ops)


def thread_axis(tag: str = "vthread", name: str = "") -> ThreadAxis:
    """A hardware index to `bind` a loop to."""
    if tag not in HARDWARE_TAGS:
        raise ScheduleError(f"unknown thread tag {tag!r}; use one of {', '.join(HARDWARE_TAGS)}")
    return ThreadAxis(tag)


def replay(outputs: Iterable[Operation], records: Iterable[object]) -> Schedule:
    """A new schedule of `outputs` with `records` applied in order."""
    s = Schedule(outputs)
    for r in records:
        stage = s[r.stage]
        if isinstance(r, rec.Split):
            stage.split(r.parent, factor=r.factor, nparts=r.nparts)
        elif isinstance(r, rec.Fuse):
            stage.fuse(*r.axes)
        elif isinstance(r, rec.Reorder):
            stage.reorder(*r.order)
        elif isinstance(r, rec.Annotate):
            getattr(stage, r.kind)(r.axis)
        elif isinstance(r, rec.Bind):
            stage.bind(r.axis, r.tag)
        elif isinstance(r, rec.ComputeAt):
            stage.compute_at(s[r.target], r.axis)
        elif isinstance(r, rec.ComputeInline):
            stage.compute_inline()
        elif isinstance(r, rec.ComputeRoot):
            stage.compute_root()
    return s


__all__ = ["Axis", "Schedule", "create_schedule", "replay", "thread_axis"]
