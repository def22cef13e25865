"""The steps of a scan computed at a loop that change no state, left out a block at a time.

An online scan (`schedule.online`) under masks changes a row's states only at the steps whose
block of keys lets some key of the row through (`ScanOp.live`): under a causal mask, the blocks
above the diagonal change nothing. Placed at a loop, the scan then runs, for each instance of
the loops around it, only the steps where some row of the instance's region may change: the
triangle of blocks, FlashAttention's loop bound per block of rows. The threads around the loop
share one step loop (a step's barriers must be met by every thread of the block), so its steps
are those of any thread's rows; a thread whose own rows are all masked at a step runs it as the
identity it is there.

A step left out writes no row, so the states the readers at the loop read must keep one row
(the last live step's is then the one they read); where one keeps more, every step runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import islpy as isl

from ..ir.integers import as_int
from ..schedule.stage_guards import current_op as current
from .affine import NonAffine, cond_text
from .scans import Scan

if TYPE_CHECKING:
    from .placement import Placed, Placement


def live_steps(
    pl: Placement, scan: Scan, keep: int, prefix_axes, folds, readers, extended
) -> isl.Set | None:
    """The steps to run per instance of the prefix loops, a set over ``[prefix..., step]``;
    None where every step runs. `extended(st)` maps statement `st`'s instances (over the
    prefix, the steps and its region) to its own points."""
    if any(op.live is None for op in scan.ops):
        return None
    states = {pl.params.tensor(op) for op in scan.ops}
    if not _readers_keep_one_row(readers, states, folds):
        return None
    updates = {current(scan.stage.schedule, op.update): op for op in scan.ops}
    steps = None
    for member in scan.body:
        for st in pl.by_stage.get(member.name, []):
            op = updates.get(st.op)
            if op is None or st.role == "init":
                continue
            live = _live_set(pl, st, op)
            if live is None:
                return None
            to_root = extended(st)
            points = to_root.intersect_range(live).domain()
            n = points.dim(isl.dim_type.set)
            mine = points.project_out(isl.dim_type.set, keep + 1, n - keep - 1).reset_tuple_id()
            steps = mine if steps is None else steps.union(mine)
    if steps is None:
        return None
    for k, axis in enumerate(prefix_axes):
        tag = pl._tag(axis)
        if tag is not None and (tag.startswith("threadIdx") or tag == "vthread"):
            steps = steps.eliminate(isl.dim_type.set, k, 1)
    return steps.coalesce()


def _readers_keep_one_row(readers: list[Placed], states: set[str], folds: dict) -> bool:
    for pc in readers:
        for acc in pc.stmt.reads:
            name = acc.relation.get_tuple_name(isl.dim_type.out)
            if name in states and folds.get(name) != 1:
                return False
    return True


def _live_set(pl: Placement, st, op) -> isl.Set | None:
    """The points of the update statement `st` (of scan state `op`) that may change it."""
    axis, cond = op.live
    names = dict(pl.params.names)
    names.update({iv.var: f"d{k}" for k, iv in enumerate(op.update.op.axis)})
    names[axis.var] = "q"
    try:
        text = cond_text(cond, names)
    except NonAffine:
        return None
    dims = ", ".join(f"d{k}" for k in range(len(op.update.op.axis)))
    extent = as_int(axis.dom.extent)
    return isl.Set(
        f"{pl.params.prefix} {{ {st.root_space}[{dims}] : exists (q : 0 <= q < {extent} and "
        f"{text}) }}"
    )


def within_live(ext: isl.Set, live: isl.Set, keep: int) -> isl.Set:
    """`ext` (over ``[prefix..., step, ...]``) at the steps of `live` only."""
    n = ext.dim(isl.dim_type.set)
    wide = live.add_dims(isl.dim_type.set, n - keep - 1).set_tuple_name(ext.get_tuple_name())
    return ext.intersect(wide)


__all__ = ["live_steps", "within_live"]
