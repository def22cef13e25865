"""A stage's loop map: from its root space to the values of its leaf loops, in loop order.

Splits and fuses become exact affine relations (``parent = factor * outer + inner`` with
``0 <= inner < factor``; ``fused = outer * extent(inner) + inner``); reorders permute. isl keeps the
map exact for every size, so tails need no special care here.
"""

from __future__ import annotations

import islpy as isl

from ..schedule import records as rec
from ..schedule.axis import Axis
from ..schedule.stage import Stage


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


def loop_map(stage: Stage, root_space: str, data_only: bool = False) -> tuple[isl.Map, list[Axis]]:
    """The map ``root_space[roots] -> [leaf values]`` and the leaves in loop order."""
    current = [a for a in stage.root_axes if not (data_only and a.kind == "reduce")]
    xs = _names("x", len(current))
    result = isl.Map(f"{{ {root_space}[{', '.join(xs)}] -> [{', '.join(xs)}] }}")
    for relation in stage.relations:
        axes = (relation.parent,) if isinstance(relation, rec.Split) else relation.axes
        if data_only and axes[0].kind == "reduce":
            continue
        step, current = _step(stage, relation, current)
        result = result.apply_range(step)
    leaves = [a for a in stage.leaves if not (data_only and a.kind == "reduce")]
    order = [current.index(a) for a in leaves]
    xs = _names("x", len(current))
    permute = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(xs[k] for k in order)}] }}")
    return result.apply_range(permute), leaves


def _step(stage: Stage, relation, current: list[Axis]) -> tuple[isl.Map, list[Axis]]:
    xs = _names("x", len(current))
    if isinstance(relation, rec.Split):
        q = current.index(relation.parent)
        factor = relation.factor
        if factor is None:
            factor = _ceildiv(stage.extents[relation.parent], relation.nparts)
        outs = xs[:q] + ["o", "i"] + xs[q + 1 :]
        text = (
            f"{{ [{', '.join(xs)}] -> [{', '.join(outs)}] : "
            f"{xs[q]} = {factor} * o + i and 0 <= i < {factor} }}"
        )
        return isl.Map(text), current[:q] + [relation.outer, relation.inner] + current[q + 1 :]
    # The fused loops are adjacent in loop order, but a reorder may have moved them apart
    # in `current` (the order relations produce), so find each one.
    spots = [current.index(a) for a in relation.axes]
    fused = xs[spots[0]]
    for axis, spot in zip(relation.axes[1:], spots[1:]):
        fused = f"({fused}) * {stage.extents[axis]} + {xs[spot]}"
    q = spots[0]
    outs = [x for k, x in enumerate(xs) if k not in spots[1:]]
    outs[q - sum(1 for s in spots[1:] if s < q)] = "z"
    text = f"{{ [{', '.join(xs)}] -> [{', '.join(outs)}] : z = {fused} }}"
    rest = [a for k, a in enumerate(current) if k not in spots[1:]]
    rest[rest.index(relation.axes[0])] = relation.fused
    return isl.Map(text), rest
