"""Staged copies of global tensors fill their whole buffer, reading clamped indices at the edge.

A copy computed at a consumer's loop (TE's ``cache_read(A, "shared", [C])`` with
``compute_at``) stages the elements its readers need there. Where a tile overhangs the edge of
the tensor (a size that is not a multiple of the tile), that footprint is smaller than the
buffer, and isl guards every instance of the copy with the condition that its element exists:
for a GPU GEMM, a branch around each load of the next tile in the hot loop, and registers held
for it. ptxas then allocates more registers than for a divisible size.

A copy can instead fill its buffer's whole box, constant in size, with no guard, provided the
positions outside the tensor read some element that exists. Nothing that exists reads them:
the readers' footprint is exactly the positions inside, so what the extra positions hold is as
unobservable as the stale values a guarded copy leaves there. Positions past the tensor's end
read ``min(i, n - g + i % g)`` instead of ``i``: equal to ``i`` inside the tensor when `g`
divides `n`, and at most ``n - 1`` outside. With `g` the width of the copy's vectorized loop,
a vector of `g` lanes stays one aligned vector load: ``min(b + lane, n - g + lane)`` is
``min(b, n - g) + lane``.

This is done only where it is exact and cheap: a copy of a tensor in global memory (an input,
or a stage computed at root), a box of constant extents not expanded per virtual thread, and
constant extents along every dimension it overhangs, divisible by `g` where `g` > 1; never for
a tensorized copy (a tensor instruction moves whole tiles from one base: it cannot clamp row by
row). Elsewhere
the copy keeps its footprint and its guards.
"""

from __future__ import annotations

import islpy as isl

from ..ir.expr import Const, Read
from ..ir.tensor import ComputeOp, PlaceholderOp
from ..schedule import records as rec
from ..schedule.axis import Axis
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .statements import Statement

Clamp = tuple[int, int]  # (the tensor's extent, the granularity g)


def box_clamps(
    schedule: Schedule,
    producer: Stage,
    statements: list[Statement],
    bmin: list[isl.PwAff],
    box: list[int | None],
    extents: dict[Axis, int | None],
    expanded: bool,
    context: isl.Set,
) -> dict[int, Clamp] | None:
    """The dimensions whose reads need clamping (by dimension) when `producer` fills its whole
    `box` (offset `bmin` over the prefix), or None when it keeps its footprint."""
    if expanded or any(c is None for c in box) or len(statements) != 1:
        return None
    if not box:
        return None  # a 0-d tensor (a scalar parameter's copy): one element, no edge
    if producer.tensorized is not None:
        return None  # a tensor instruction moves whole tiles: it cannot clamp row by row
    source = _copied(statements[0])
    if source is None or not _in_global_memory(schedule, source):
        return None
    lanes = _vector_lanes(producer, extents)
    if lanes > 1 and box[-1] % lanes:
        return None  # a vector would span two rows of the box
    clamps: dict[int, Clamp] = {}
    for d, (low, size) in enumerate(zip(bmin, box)):
        extent = source.shape[d]
        if isinstance(extent, Const) and not _overhangs(low, size, int(extent.value), context):
            continue
        g = lanes if d == len(box) - 1 else 1
        if not isinstance(extent, Const) or int(extent.value) % g:
            return None
        clamps[d] = (int(extent.value), g)
    return clamps


def box_domain(needed: isl.Map, box: list[int]) -> isl.Set:
    """``[prefix..., x...]`` for every prefix point with a footprint and every box position."""
    xs = [f"x{d}" for d in range(len(box))]
    bounds = " and ".join(f"0 <= {x} < {c}" for x, c in zip(xs, box))
    positions = isl.Set(f"{{ [{', '.join(xs)}] : {bounds} }}")
    domain = needed.domain()
    positions = positions.align_params(domain.get_space())
    return isl.Map.from_domain_and_range(domain, positions).wrap().flatten()


def _copied(st: Statement):
    """The operation `st` copies element for element, or None when it computes anything else."""
    value = st.value
    if st.role != "compute" or not isinstance(value, Read):
        return None
    if tuple(value.indices) != tuple(st.root_vars):
        return None
    return value.tensor.op


def _in_global_memory(schedule: Schedule, op) -> bool:
    if isinstance(op, PlaceholderOp):
        return True
    if not isinstance(op, ComputeOp):
        return False
    stage = next((s for s in schedule.stages if s.op is op), None)
    return (
        stage is not None
        and not isinstance(stage.attach, (rec.ComputeAt, rec.ComputeInline))
        and stage.scope in (None, "global")
    )


def _vector_lanes(producer: Stage, extents: dict[Axis, int | None]) -> int:
    """The width of the copy's innermost loop when it is vectorized, else 1."""
    inner = producer.leaves[-1]
    if producer.annotations.get(inner) != "vectorized":
        return 1
    return extents.get(inner) or 1


def _overhangs(low: isl.PwAff, size: int, extent: int, context: isl.Set) -> bool:
    """Whether the box ``[low, low + size)`` passes `extent` for some prefix point and sizes."""
    past = low.add_constant_val(isl.Val.int_from_si(low.get_ctx(), size - extent - 1))
    return not past.nonneg_set().intersect_params(context).is_empty()
