"""The elements of an input that one instance of a stage computed at a loop reads.

A stage computed at a consumer's loop (``s[AA].compute_at(s[C], ko)``) runs once per value of
the loops around that point (the *prefix*: the consumer's loops down to ``ko``, and those of
the stages it is itself computed in), over the footprint that `placement` derives from the
consumer's accesses. Here that footprint is taken one step further, through the stage's own
reads, to the elements of an input, and enumerated at concrete sizes for one value of the
prefix, so that it can be drawn. A "shared" stage is filled by all the threads of a block
together, so its prefix loops bound to ``threadIdx.*`` or ``vthread`` are left free: the answer
is then the block's tile, as staged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import islpy as isl
import numpy as np

from ..errors import InternalError
from ..ir.evaluate import _size_value
from ..ir.expr import Var
from ..schedule import records as rec
from ..schedule.axis import Axis
from ..schedule.schedule import Schedule
from ..schedule.stage import Stage
from .isl_calls import Callbacks
from .placement import Placement
from .space import Params
from .statements import build_statements, inline_bodies


@dataclass(frozen=True)
class Footprint:
    """`elements` is a bool array of `input`'s shape, true where one instance of `stage` (the
    prefix loops at the values `at`; `free` lists those left to run over) reads."""

    stage: str
    input: str
    at: dict[str, int]
    free: tuple[str, ...]
    elements: np.ndarray


def footprint(
    schedule: Schedule,
    stage: Stage,
    input_name: str,
    at: Mapping[str, int],
    sizes: Mapping[Var, int],
) -> Footprint:
    """The elements of `input_name` that `stage` reads for one value of its prefix loops:
    `at` by loop name, 0 for a loop not named there (see the module docstring)."""
    params = Params([st.op for st in schedule.stages])
    statements = build_statements(schedule, inline_bodies(schedule), params)
    placement = Placement(schedule, statements, params)
    axes = prefix_axes(schedule, stage)
    unknown = sorted(set(at) - {a.name for a in axes})
    if unknown:
        names = ", ".join(a.name for a in axes) or "none"
        raise ValueError(
            f"'{stage.name}' is computed inside loops {names}; it has no prefix loop "
            f"{', '.join(unknown)}"
        )
    shared = placement.scope(stage) == "shared"
    free = tuple(a.name for a in axes if shared and _is_thread(schedule, a))
    values = {a.name: int(at.get(a.name, 0)) for a in axes if a.name not in free}
    reads = [
        (p, acc)
        for p in placement.placed.get(stage.name, [])
        for acc in p.stmt.reads
        if acc.op.name == input_name
    ]
    if not reads:
        read = sorted({acc.op.name for st in statements if st.stage is stage for acc in st.reads})
        raise ValueError(
            f"'{stage.name}' does not read '{input_name}'; it reads {', '.join(read) or 'nothing'}"
        )
    shape = tuple(_size_value(e, sizes) for e in reads[0][1].op.shape)
    elements = np.zeros(shape, bool)
    for p, acc in reads:
        if p.prefix_len != len(axes):
            raise InternalError(f"{p.stmt.name}: {p.prefix_len} prefix loops, expected {axes}")
        domain = _fix(p.domain, params, sizes, axes, values)
        image = p.to_root.apply_range(acc.relation).intersect_domain(domain).range()
        image = image.project_out(isl.dim_type.param, 0, image.dim(isl.dim_type.param))
        with Callbacks() as calls:  # a Ctrl-C in `_mark` stops the walk (`isl_calls`)
            image.foreach_point(calls.wrap(lambda point: _mark(elements, point)))
    return Footprint(stage.name, input_name, values, free, elements)


def prefix_axes(schedule: Schedule, stage: Stage) -> list[Axis]:
    """The loops around the point where `stage` is computed, outermost first."""
    attach = stage.attach
    if not isinstance(attach, rec.ComputeAt):
        return []
    target = schedule[attach.target]
    upto = target.leaves.index(attach.axis) + 1
    return prefix_axes(schedule, target) + list(target.leaves[:upto])


def _is_thread(schedule: Schedule, axis: Axis) -> bool:
    tag = schedule[axis.stage].binds.get(axis, "")
    return tag.startswith("threadIdx") or tag == "vthread"


def _fix(domain: isl.Set, params: Params, sizes, axes: list[Axis], values: dict) -> isl.Set:
    ctx = domain.get_ctx()
    for var, name in params.names.items():
        position = domain.find_dim_by_name(isl.dim_type.param, name)
        if position >= 0:
            domain = domain.fix_val(
                isl.dim_type.param, position, isl.Val.int_from_si(ctx, sizes[var])
            )
    for d, axis in enumerate(axes):
        if axis.name in values:
            domain = domain.fix_val(
                isl.dim_type.set, d, isl.Val.int_from_si(ctx, values[axis.name])
            )
    return domain


def _mark(elements: np.ndarray, point: isl.Point) -> None:
    n = point.get_space().dim(isl.dim_type.set)
    index = tuple(point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n))
    elements[index] = True
