"""Groups of stages placed together (TE's ``s.create_group``).

A group names the stages between some inputs and some outputs, so that one ``compute_at``
places them all: each stage of the group not computed inside another stage of the group is
computed at the loop given, and those computed inside one another stay where they are. A group
records nothing of its own: what it does is the compute_at records of its stages, so a copy or
a replay of the schedule has the same loop nest (without the group, which only named them).
Groups nest: a stage belongs to the smallest group holding it, a group to the smallest holding
all of its stages.

As in TE, a scan's body (the stages that compute its steps, its updates among them) is a group
of its own from the start (`scan_groups`): its stages are computed inside one another or at the
root, where they step in the scan's loop, never at a stage outside it (`compute_at` says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ScheduleError, entry_point
from ..ir.tensor import PlaceholderOp
from . import records as rec

if TYPE_CHECKING:
    from .schedule import Schedule
    from .stage import Stage


class Group:
    """Stages placed together; obtain with ``s.create_group(outputs=..., inputs=...)``."""

    def __init__(self, schedule: Schedule, members: tuple[str, ...]) -> None:
        self.schedule = schedule
        self.members = members  # stage names, in schedule order
        self.attach_stage: Stage | None = None
        self.attach_ivar: object = None

    def __repr__(self) -> str:
        return f"Group({', '.join(self.members)})"

    @property
    def group(self) -> Group | None:
        """The smallest other group holding all of this group's stages (None if none)."""
        return innermost(self.schedule, set(self.members), exclude=self)

    @property
    def num_child_stages(self) -> int:
        """The stages whose group this is, and the groups it directly holds."""
        stages = sum(1 for name in self.members if self.schedule[name].group is self)
        return stages + sum(1 for g in self.schedule.groups if g is not self and g.group is self)

    @entry_point
    def compute_at(self, parent: Stage, axis: object) -> None:
        """Compute the group's stages inside `parent`'s loop `axis` (those computed inside
        another stage of the group stay there)."""
        for stage in self._outermost():
            stage.compute_at(parent, axis)
        self.attach_stage, self.attach_ivar = parent, axis

    @entry_point
    def compute_root(self) -> None:
        """Compute the group's stages at the root (those inside one another stay there)."""
        for stage in self._outermost():
            stage.compute_root()
        self.attach_stage = self.attach_ivar = None

    def _outermost(self) -> list[Stage]:
        """The computed stages of the group not computed inside another stage of it."""
        found = []
        for name in self.members:
            stage = self.schedule[name]
            attach = stage.attach
            inside = isinstance(attach, rec.ComputeAt) and attach.target in self.members
            if not inside and not isinstance(stage.op, PlaceholderOp):
                found.append(stage)
        return found


def create_group(
    s: Schedule, outputs: object, inputs: object, include_inputs: bool = False
) -> Group:
    """The stages that `outputs` are computed from, up to `inputs` (which are included with
    `include_inputs`)."""
    ends = [s[t] for t in _listed(outputs)]
    starts = {s[t].name for t in _listed(inputs)}
    found: set[str] = set()
    pending = list(ends)
    while pending:
        stage = pending.pop()
        if stage.name in found or (stage.name in starts and not include_inputs):
            continue
        found.add(stage.name)
        if stage.name in starts:
            continue
        for op in stage.ops:
            pending.extend(s[t] for t in op.input_tensors)
    if not found:
        raise ScheduleError("create_group: no stage lies between the inputs and the outputs")
    group = Group(s, tuple(st.name for st in s.stages if st.name in found))
    s.groups.append(group)
    return group


def scan_groups(s: Schedule) -> list[Group]:
    """Each scan's body as a group (see the module), its members as the body is now."""
    from ..ir.scan import ScanOp
    from .stage_guards import current_op, scan_stages

    found = []
    for stage in s.stages:
        if not isinstance(stage.op, ScanOp):
            continue
        inits = {s[current_op(s, op.init)].name for op in stage.ops}
        body = tuple(name for name in scan_stages(stage) if name not in inits)
        group = s.scan_groups.setdefault(stage.name, Group(s, body))
        group.members = body
        found.append(group)
    return found


def innermost(s: Schedule, names: set[str], exclude: Group | None = None) -> Group | None:
    """The group with the fewest stages that holds every stage of `names` (the first made
    among equals, the scans' before the user's), `exclude` aside."""
    groups = [*scan_groups(s), *s.groups]
    holding = [g for g in groups if g is not exclude and names <= set(g.members)]
    if exclude is not None:  # a group's parent is larger, or an equal one made before it
        made = groups.index(exclude)
        holding = [
            g for g in holding if len(g.members) > len(exclude.members) or groups.index(g) < made
        ]
    return min(holding, key=lambda g: len(g.members), default=None)


def _listed(tensors: object) -> list:
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    return [tensors]
