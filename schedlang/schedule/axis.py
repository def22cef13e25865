"""Loops of a stage as the schedule sees them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..ir.expr import Var


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

    def __str__(self) -> str:
        return self.name


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
