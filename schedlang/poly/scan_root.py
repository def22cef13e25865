"""A scan at the root: its body stages left at the root run in one loop over the steps.

In the algorithm, step t of every body stage runs before step t + 1 of any (`scans`), as TE
runs a scan's body inside the scan's step loop. A body stage left at the root is placed there:
all of them share one step loop, at the place of the last of them in stage order (after
everything they read from outside the scan), each taking its slot inside that loop in stage
order, with the stages computed at its step loop just before it. A body stage whose step loop
is split, fused, bound or annotated is not stepped (it runs its own loop, and the legality
check says whether its steps may run apart).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schedule import records as rec
from ..schedule.stage import Stage
from .scan_placement import _in_step
from .scans import Scan

if TYPE_CHECKING:
    from .placement import Placement


def stepped(scans: list[Scan]) -> dict[str, list[Stage]]:
    """Each scan at the root -> its body stages stepped in its loop, in stage order."""
    found = {}
    for scan in scans:
        if isinstance(scan.stage.attach, rec.ComputeAt):
            continue
        group = [s for s in scan.body if _steps_in_order(s)]
        if group:
            found[scan.stage.name] = group
    return found


def _steps_in_order(member: Stage) -> bool:
    if isinstance(member.attach, (rec.ComputeAt, rec.ComputeInline)):
        return False
    step = member.root_axes[0]
    return member.leaves[0] is step and step not in member.binds and step not in member.annotations


def place_steps(pl: Placement, scan_name: str, group: list[Stage], slot: int) -> None:
    """Place `group` (see `stepped`) at the root sibling slot `slot`, in one step loop."""
    base = 0
    for member in group:
        step = member.leaves[0]
        templates = _in_step(pl._templates(member, [], slot), 2, base)
        pl.child_base[(member.name, step)] = base
        pl.step_loops[step] = scan_name
        base += pl._betas(member, 0)[1] + (2 if pl._split_level(member) == 1 else 1)
        pl._place_root(member, slot, templates)
