"""What a stage's loops are now, as TE code reads them (``leaf_iter_vars``, ``all_iter_vars``).

A root loop is shown as the op's IterVar (``s[C].op.axis[0]``, the object the user holds) and a
loop made by split or fuse as the axis the primitive returned, so every item compares equal to
what the user holds and can be passed back to a primitive of the stage.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..ir.tensor import IterVar
from . import records as rec
from .axis import Axis

if TYPE_CHECKING:
    from .group import Group
    from .stage import Stage


def shown(stage: Stage, axis: Axis) -> IterVar | Axis:
    """`axis` as the user holds it: a root loop's IterVar, or the axis itself."""
    return stage.itervars.get(axis, axis)


def made_axes(stage: Stage) -> list[Axis]:
    """The loops split and fuse made, in the order they were made (outer before inner)."""
    made: list[Axis] = []
    for r in stage.relations:
        if isinstance(r, rec.Split):
            made += [r.outer, r.inner]
        else:
            made.append(r.fused)
    return made


class IterType(enum.IntEnum):
    """How a loop runs, by TE's numbers (``IterVar.Unrolled`` ...)."""

    DataPar = 0
    ThreadIndex = 1
    CommReduce = 2
    Ordered = 3
    DimInfo = 4
    Unrolled = 5
    Vectorized = 6
    Parallelized = 7
    Tensorized = 8


_ANNOTATED = {
    "unrolled": IterType.Unrolled,
    "vectorized": IterType.Vectorized,
    "parallel": IterType.Parallelized,
}


class AttachType(enum.IntEnum):
    """Where a stage is computed, by TE's numbers (``s[B].attach_type``)."""

    GroupRoot = 1  # at the root
    Inline = 2
    InlinedAlready = 3
    Scope = 4  # at a loop of another stage
    ScanUpdate = 5


@dataclass(frozen=True)
class IterVarAttr:
    """What the schedule asked of one loop: `iter_type` (an `IterType`), `bind_thread` (the
    hardware index it is bound to, or None), `tensor_intrin` (what it is tensorized with)."""

    iter_type: IterType
    bind_thread: str | None = None
    tensor_intrin: object = None
    pragma_keys: tuple[PragmaKey, ...] = ()  # the pragmas kept on it (`Stage.pragma`)
    pragma_values: tuple = ()  # and their values


@dataclass(frozen=True)
class PragmaKey:
    """A pragma's name as TE reports it: a string constant, read through ``.value``."""

    value: str


class StageViews:
    """TE's read-only views of a stage (mixed into `Stage`)."""

    @property
    def leaf_iter_vars(self: Stage) -> list[IterVar | Axis]:
        """The stage's loops now, outermost first.

        After ``xo, xi = s[C].split(C.op.axis[0], factor=4)`` on ``C[i, j]``::

            s[C].leaf_iter_vars == [xo, xi, C.op.axis[1]]
        """
        return [shown(self, a) for a in self.leaves]

    @property
    def all_iter_vars(self: Stage) -> list[IterVar | Axis]:
        """Every loop the stage has had: its root axes (data, then reduce), then the loops
        made by split and fuse, in the order they were made; those split or fused away stay."""
        return [shown(self, a) for a in (*self.root_axes, *made_axes(self))]

    @property
    def attach_type(self: Stage) -> AttachType:
        """Where the stage is computed: at the root, inlined, or at another stage's loop."""
        if isinstance(self.attach, rec.ComputeInline):
            return AttachType.Inline
        if isinstance(self.attach, rec.ComputeAt):
            return AttachType.Scope
        return AttachType.GroupRoot

    @property
    def group(self: Stage) -> Group | None:
        """The smallest group (``s.create_group``) holding the stage, or None."""
        from .group import innermost

        return innermost(self.schedule, {self.name})

    @property
    def is_output(self: Stage) -> bool:
        """Whether the stage computes an output of the schedule (the caller's array)."""
        return any(op in self.schedule.output_ops for op in self.ops)

    @property
    def iter_var_attrs(self: Stage) -> dict[IterVar | Axis, IterVarAttr]:
        """The loops that were annotated, bound or tensorized, each with what was asked of it
        (TE's ``s[C].iter_var_attrs[xi].iter_type == IterVar.Unrolled``)."""
        attrs: dict[IterVar | Axis, IterVarAttr] = {}
        for axis in (*self.root_axes, *made_axes(self)):
            kind = _ANNOTATED.get(self.annotations.get(axis, ""))
            intrin = None
            if self.tensorized is not None and self.tensorized.axis == axis:
                kind, intrin = IterType.Tensorized, self.tensorized.intrin
            pragmas = self.pragmas.get(axis, [])
            if kind is None and axis not in self.binds and not pragmas:
                continue
            if kind is None:
                kind = IterType.CommReduce if axis.kind == "reduce" else IterType.DataPar
            keys = tuple(PragmaKey(name) for name, _ in pragmas)
            values = tuple(value for _, value in pragmas)
            attrs[shown(self, axis)] = IterVarAttr(kind, self.binds.get(axis), intrin, keys, values)
        return attrs
