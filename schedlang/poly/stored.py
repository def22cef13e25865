"""Intermediate stages listed in `args`: stored whole, at their own indices, in the caller's array.

A stage that is neither an input nor an output is computed into a buffer schedlang allocates:
the box of what its readers need at the loop it is computed at, indexed from the box's corner.
When the caller also lists it in `args`, they expect the array they pass to hold its values, as
TE stores such a tensor at its full indices. Its statements then write the argument at absolute
indices and its readers read it there; everything else about where it is computed is unchanged.

That is exact only where the argument can be written that way: not for an inlined stage (it has
no values of its own), nor for one given another memory scope or a padded or doubled layout, nor
where parallel iterations would write the same elements at once (each recomputes an overlapping
part: a reduction's init in one would reset another's partial sums). Those are refused here,
before anything is generated.
"""

from __future__ import annotations

import islpy as isl

from ..errors import LoweringError
from ..ir.tensor import Operation
from ..schedule import records as rec
from ..schedule.axis import Axis
from ..schedule.errors import PlacementError, ScopeError, message
from ..schedule.schedule import Schedule
from .scans import Scan

_ADVICE = "compute it at root (compute_root()), or leave it out of args"


def check_storable(s: Schedule, stored: frozenset[Operation], scans: list[Scan]) -> None:
    """Refuse intermediate stages in `stored` whose values cannot be left in an argument."""
    stepped = {member.name: scan for scan in scans for member in scan.body}
    for stage in s.stages:
        listed = [op for op in stage.ops if op in stored]
        if not listed or stage.op in s.output_ops:
            continue
        name = stage.name
        if name in stepped:
            raise LoweringError(
                f"'{name}' is in args, but it is computed step by step in the scan "
                f"'{stepped[name].stage.name}', from the step after the init's rows: its first "
                "rows are never computed; leave it out of args"
            )
        if len(listed) != len(stage.ops):
            missing = ", ".join(op.name for op in stage.ops if op not in stored)
            raise LoweringError(
                f"args list some outputs of the intermediate stage '{name}' but not {missing}; "
                "its outputs are computed together: list all of them in args, or none"
            )
        if isinstance(stage.attach, rec.ComputeInline):
            raise LoweringError(
                message(
                    name,
                    "compute_inline()",
                    stage.attach.loc,
                    f"'{name}' is in args, but inlined into its readers it has no values of its "
                    f"own to store there; leave it out of args, or do not inline it",
                )
            )
        for cls, call, what in (
            (rec.SetScope, f"set_scope({stage.scope!r})", "lives in another memory scope"),
            (rec.DoubleBuffer, "double_buffer()", "is kept in two copies"),
            (rec.StorageAlign, "storage_align(...)", "has padded rows"),
        ):
            if _has(s, cls, name):
                raise ScopeError(
                    message(
                        name,
                        call,
                        _loc(s, cls, name),
                        f"'{name}' is in args, so it is stored in the caller's array, which "
                        f"is global, unpadded and single; this stage {what}. Remove the "
                        f"{call.split('(')[0]}, or leave '{name}' out of args",
                    )
                )


def _loc(s: Schedule, cls: type, stage: str) -> str:
    """Where the user asked for it; '' for a scope that cache_read/cache_write gave."""
    found = [r for r in s.records if isinstance(r, cls) and r.stage == stage]
    return found[-1].loc if found else ""


def _has(s: Schedule, cls: type, stage: str) -> bool:
    if cls is rec.SetScope:
        return s[stage].scope not in (None, "global")
    if cls is rec.DoubleBuffer:
        return s[stage].double_buffered
    return bool(s[stage].align)


def check_stored_at(s: Schedule, stage_name: str, needed: isl.Map, prefix: list[Axis]) -> None:
    """A stage in args computed at a consumer's loop: its own loops run in one thread, and no
    two parallel values of the loops around it (`prefix`) need a common element (`needed`:
    prefix values -> elements of the stage)."""
    stage = s[stage_name]
    attach = stage.attach
    call = f"compute_at(s[{attach.target}], {attach.axis.name})"
    for axis, tag in stage.binds.items():
        raise PlacementError(
            message(
                stage_name,
                call,
                attach.loc,
                f"'{stage_name}' is in args, so it is stored in the caller's array, but its "
                f"loop '{axis.name}' is bound to {tag}: threads would fill it together, with "
                f"nothing to order their writes before the reads; {_ADVICE}",
            )
        )
    parallel = [d for d, axis in enumerate(prefix) if _runs_in_parallel(s, axis)]
    if not parallel:
        return
    n = len(prefix)
    ps, qs = [f"p{d}" for d in range(n)], [f"q{d}" for d in range(n)]
    differ = " or ".join(f"{ps[d]} < {qs[d]}" for d in parallel)
    apart = isl.Map(f"{{ [{', '.join(ps)}] -> [{', '.join(qs)}] : {differ} }}")
    apart = apart.align_params(needed.get_space())
    common = needed.apply_range(needed.reverse()).intersect(apart)
    if common.is_empty():
        return
    point = common.wrap().sample_point()
    first = [point.get_coordinate_val(isl.dim_type.set, d).to_python() for d in range(n)]
    second = [point.get_coordinate_val(isl.dim_type.set, n + d).to_python() for d in range(n)]
    loops = ", ".join(f"'{prefix[d].name}'" for d in parallel)
    at = ", ".join(f"{a.name}={v}" for a, v in zip(prefix, first))
    other = ", ".join(f"{a.name}={v}" for a, v in zip(prefix, second))
    raise PlacementError(
        message(
            stage_name,
            call,
            attach.loc,
            f"'{stage_name}' is in args, so it is stored in the caller's array, but the parts "
            f"computed at ({at}) and at ({other}) share elements and run in parallel (loops "
            f"{loops}): both would write them at once; compute it at a loop where the parts "
            f"do not overlap, {_ADVICE}",
        )
    )


def _runs_in_parallel(s: Schedule, axis: Axis) -> bool:
    stage = s[axis.stage]
    return axis in stage.binds or stage.annotations.get(axis) in ("parallel", "vectorized")
