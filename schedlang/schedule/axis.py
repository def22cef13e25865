"""Loops of a stage as the schedule sees them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.expr import Var

_VAR_KIND = {"data": "axis", "reduce": "reduce"}


@dataclass(frozen=True, slots=True)
class Axis:
    """One loop of a stage: a root axis of the op, or one made by split/fuse.

    `kind` is ``"data"`` or ``"reduce"``. Compared by value (stage and name are unique within a
    schedule), so that the axes a user holds also name the same loops in a copy or a replay.
    """

    stage: str
    name: str
    kind: str
    # Read by IterVar's ``==``, which then gives False instead of building an expression.
    is_schedule_loop: ClassVar[bool] = True

    def __repr__(self) -> str:
        return f"Axis({self.stage}.{self.name})"

    @property
    def var(self) -> Var:
        """The loop's variable (TE's ``IterVar.var``), one for every loop of this stage and
        name: the reduce axis that rfactor makes of a loop split off the factored one has it
        (TE's ``BF.op.body[0].axis[1].var == ko.var``)."""
        found = _LOOP_VARS.get(self)
        if found is None:
            found = _LOOP_VARS[self] = Var(self.name, "int32", _VAR_KIND[self.kind])
        return found

    def __str__(self) -> str:
        return self.name


# Axes compare by value, so the variable of a loop is kept here rather than on the axis.
_LOOP_VARS: dict[Axis, Var] = {}


@dataclass(frozen=True, slots=True)
class ThreadAxis:
    """A hardware index to bind a loop to (``sl.thread_axis("threadIdx.x")``)."""

    tag: str

    @property
    def var(self) -> Var:
        """The index as a value, for `Stage.set_store_predicate` (TE's ``tx.var``): in a
        statement, the variable of the loop bound to this index around it."""
        return Var(self.tag, "int32", "thread")

    def __str__(self) -> str:
        return self.tag


def _as_value(name: str):
    """ThreadAxis's operator `name`: the index's value's, as TE's IterVar is an expression
    (``block_x * 32 + thread_y < n``, ``thread_x.equal(0)`` in a store predicate)."""

    def operator(self: ThreadAxis, *other: object) -> object:
        return getattr(self.var, name)(*other)

    operator.__name__ = operator.__qualname__ = name
    return operator


for _name in (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__",
    "__mod__", "__lt__", "__le__", "__gt__", "__ge__", "equal", "astype",
):  # fmt: skip
    setattr(ThreadAxis, _name, _as_value(_name))
