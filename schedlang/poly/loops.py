"""A stage's loop map: from its root space to the values of its leaf loops, in loop order.

Splits and fuses become exact affine relations (``parent = factor * outer + inner`` with
``0 <= inner < factor``; ``fused = outer * extent(inner) + inner``); reorders permute. isl keeps the
map exact for every size, so tails need no special care here.
"""

from __future__ import annotations

import islpy as isl

from ..schedule import records as rec
from ..schedule.axis import Axis
from ..schedule.errors import FactorError, message
from ..schedule.stage import Stage


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


def leaf_extents(stage: Stage, roots: dict[Axis, int | None]) -> dict[Axis, int | None]:
    """Every loop's extent given the root loops' (None where not constant).

    A stage computed at another's loop runs over the box of its footprint, not over its
    whole tensor, so its fuses and nparts-splits are lowered with the box's extents (as TE's
    bound inference does).
    """
    extents = dict(roots)
    for r in stage.relations:
        if isinstance(r, rec.Split):
            parent = extents[r.parent]
            if r.factor is not None:
                extents[r.outer] = None if parent is None else _ceildiv(parent, r.factor)
                extents[r.inner] = r.factor
            else:
                extents[r.outer] = r.nparts
                extents[r.inner] = None if parent is None else _ceildiv(parent, r.nparts)
        else:
            total: int | None = 1
            for a in r.axes:
                total = None if total is None or extents[a] is None else total * extents[a]
            extents[r.fused] = total
    return extents


def loop_map(
    stage: Stage, root_space: str, extents: dict[Axis, int | None], data_only: bool = False
) -> tuple[isl.Map, list[Axis]]:
    """The map ``root_space[roots] -> [leaf values]`` and the leaves in loop order."""
    current = [a for a in stage.root_axes if not (data_only and a.kind == "reduce")]
    xs = _names("x", len(current))
    result = isl.Map(f"{{ {root_space}[{', '.join(xs)}] -> [{', '.join(xs)}] }}")
    for relation in stage.relations:
        axes = (relation.parent,) if isinstance(relation, rec.Split) else relation.axes
        if data_only and axes[0].kind == "reduce":
            continue
        step, current = _step(relation, current, extents)
        result = result.apply_range(step)
    leaves = [a for a in stage.leaves if not (data_only and a.kind == "reduce")]
    order = [current.index(a) for a in leaves]
    xs = _names("x", len(current))
    permute = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(xs[k] for k in order)}] }}")
    return result.apply_range(permute), leaves


def _step(relation, current: list[Axis], extents: dict) -> tuple[isl.Map, list[Axis]]:
    xs = _names("x", len(current))
    if isinstance(relation, rec.Split):
        q = current.index(relation.parent)
        factor = relation.factor
        if factor is None:
            factor = extents[relation.inner]
            if factor is None:
                _symbolic(
                    relation,
                    f"split({relation.parent.name}, nparts={relation.nparts})",
                    f"'{relation.parent.name}' has a symbolic extent here, and nparts needs a "
                    "constant one; split by factor= instead",
                )
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
    symbolic = [a.name for a in relation.axes[1:] if extents[a] is None]
    if symbolic:
        _symbolic(
            relation,
            f"fuse({', '.join(a.name for a in relation.axes)})",
            f"'{symbolic[0]}' has a symbolic extent here; only the outermost fused loop may: "
            "split it by a constant factor first",
        )
    for axis, spot in zip(relation.axes[1:], spots[1:]):
        fused = f"({fused}) * {extents[axis]} + {xs[spot]}"
    q = spots[0]
    outs = [x for k, x in enumerate(xs) if k not in spots[1:]]
    outs[q - sum(1 for s in spots[1:] if s < q)] = "z"
    text = f"{{ [{', '.join(xs)}] -> [{', '.join(outs)}] : z = {fused} }}"
    rest = [a for k, a in enumerate(current) if k not in spots[1:]]
    rest[rest.index(relation.axes[0])] = relation.fused
    return isl.Map(text), rest


def _symbolic(relation, call: str, what: str) -> None:
    """A split or fuse that needs a constant extent got a symbolic one. Checked at lowering: a
    stage computed at another's loop only then knows its extents (its footprint's box)."""
    raise FactorError(message(relation.stage, call, relation.loc, what))
