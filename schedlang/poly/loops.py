"""A stage's loop map: from its root space to the values of its leaf loops, in loop order.

Splits and fuses become exact affine relations (``parent = factor * outer + inner`` with
``0 <= inner < factor``; ``fused = outer * extent(inner) + inner``); reorders permute. isl keeps the
map exact for every size, so tails need no special care here.

A split into `nparts` parts of a loop whose extent is symbolic is not affine: its inner loop
runs ``ceil(n / nparts)`` times, and ``parent = outer * ceil(n / nparts) + inner`` multiplies a
loop variable by a size. Such a split is *deferred*: isl sees the parent's values on the outer
loop's dimension and 0 on the inner's, and `loopir.from_isl` strip-mines that one loop into the
two (`deferred_splits`), the parent's values in order, the tail guarded. Its two loops then stay
together: nothing is split, fused, bound, annotated or computed at the inner one, nor placed
between them, and nothing is computed at the outer one.

A fuse of root loops below whose first one an extent is symbolic (``fused = i * m + j``) is
deferred likewise (`deferred_fuses`): isl keeps the root loops (`isl_leaves` lists them where
the stage's leaves have the fused loop, or the two loops of its split by a factor), and
`loopir.from_isl` turns their nest into the fused loop, each root index recovered by division
and modulo. Such a stage is computed at the root, its fused loops serial or parallel, and
nothing is computed at them.

A fuse of three or more tile loops of constant extents, with stages computed inside the
tiles, is made the same way (`_tiles`): isl's exact fused index served the loops, but the code
it made for each stage computed inside recovered the tile indices by cases, which a fill by
the copy engine (one box per fill) cannot be. There the fused loop may be split by `nparts`,
its outer loop bound to a block index: blocks that take the tiles in turn (persistent
blocks), which isl checks as it checks the tile loops bound to that index. Tile loops whose
split's inner loop is bound to a thread index are left to isl's fused index: the fused loop
made here is serial, parallel or a block's.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    deferred = deferred_splits(stage, extents)
    kept = {id(r) for g in deferred_fuses(stage, extents) for r in (g.fuse, g.split) if r}
    fused = {a for r in stage.relations if isinstance(r, rec.Fuse) for a in r.axes}
    for relation in stage.relations:
        axes = (relation.parent,) if isinstance(relation, rec.Split) else relation.axes
        if (data_only and any(a.kind == "reduce" for a in axes)) or id(relation) in kept:
            continue
        if any(relation is r for r in deferred.values()):
            step, current = _deferred(relation, current)
        else:
            step, current = _step(relation, current, extents, fused)
        result = result.apply_range(step)
    leaves = [a for a in isl_leaves(stage, extents) if not (data_only and a.kind == "reduce")]
    leaves += [a for a in current if a not in leaves]  # fused with reduce loops (`init_leaves`)
    order = [current.index(a) for a in leaves]
    xs = _names("x", len(current))
    permute = isl.Map(f"{{ [{', '.join(xs)}] -> [{', '.join(xs[k] for k in order)}] }}")
    return result.apply_range(permute), leaves


def init_leaves(stage: Stage, extents: dict[Axis, int | None]) -> list[Axis]:
    """The loops of a reduction's init, in order: the stage's data loops, then the data
    loops fused with reduce loops (the loop a fuse of both makes is a reduce loop, as in TE,
    so the init runs them on their own, innermost, before the fused loop)."""
    return loop_map(stage, "S", extents, data_only=True)[1]


def deferred_splits(stage: Stage, extents: dict[Axis, int | None]) -> dict[Axis, rec.Split]:
    """The stage's nparts-splits of symbolic extents (see the module), by outer loop, each
    checked to keep its loops together."""
    found = {
        r.outer: r
        for r in stage.relations
        if isinstance(r, rec.Split) and r.factor is None and extents.get(r.inner) is None
    }
    for r in found.values():
        call = f"split({r.parent.name}, nparts={r.nparts})"

        def refuse(what: str, r=r, call=call) -> None:
            raise FactorError(
                message(
                    r.stage,
                    call,
                    r.loc,
                    f"'{r.parent.name}' has a symbolic extent here, so the inner loop runs "
                    f"ceil(extent / {r.nparts}) times, which isl cannot state: its two loops "
                    f"are kept together by the code generator, and {what}",
                )
            )

        used = [x for x in stage.relations if x is not r and _uses(x, (r.outer, r.inner))]
        if used:
            refuse("they cannot be split or fused further; split by factor= instead")
        leaves = stage.leaves
        if r.inner in stage.binds or r.inner in stage.annotations:
            refuse(f"the inner loop '{r.inner.name}' cannot be bound or annotated")
        if leaves.index(r.inner) != leaves.index(r.outer) + 1:
            refuse("nothing can be placed between them (reorder)")
        for other in stage.schedule.stages:
            attach = other.attach
            if isinstance(attach, rec.ComputeAt) and attach.target == stage.name:
                if attach.axis in (r.outer, r.inner):
                    refuse(f"'{other.name}' cannot be computed at one of them")
    return found


@dataclass(frozen=True)
class FusedGroup:
    """A deferred fuse (see the module): the root loops it fuses, and the loops made of it."""

    fuse: rec.Fuse
    components: tuple[Axis, ...]
    split: rec.Split | None  # the fused loop split by a factor, if it is
    leaves: tuple[Axis, ...]  # the fused loop, or the two of its split
    factor: int | None = None  # the split's factor (of an nparts split, the loop it makes)
    tiles: bool = False  # tile loops of constant extents (`_tiles`), not symbolic ones


def deferred_fuses(stage: Stage, extents: dict[Axis, int | None]) -> list[FusedGroup]:
    """The stage's fuses of symbolic extents, and its fuses of tiles (see the module), each
    checked."""
    found = []
    for r in stage.relations:
        if not isinstance(r, rec.Fuse):
            continue
        if all(extents.get(a) is not None for a in r.axes[1:]):
            if _tiles(stage, r, extents):
                found.append(_tile_group(stage, r, extents))
            continue
        call = f"fuse({', '.join(a.name for a in r.axes)})"

        def refuse(what: str, r=r, call=call) -> None:
            symbolic = next(a for a in r.axes[1:] if extents.get(a) is None)
            raise FactorError(
                message(
                    r.stage,
                    call,
                    r.loc,
                    f"'{symbolic.name}' has a symbolic extent here, so the fused index "
                    f"multiplies by it, which isl cannot state: the code generator fuses the "
                    f"loops itself, and {what}",
                )
            )

        roots = list(stage.root_axes)
        if any(a.kind == "reduce" for a in r.axes):
            refuse("a fuse with a reduce loop needs constant extents (but the outermost's)")
        if not all(a in roots for a in r.axes):
            refuse("they must be loops of the stage's own axes (fuse before splitting)")
        spots = [roots.index(a) for a in r.axes]
        if spots != list(range(spots[0], spots[0] + len(spots))):
            refuse("they must be adjacent axes, in their order")
        later, split, made = _made_of(stage, r)
        if later and (split is None or split.factor is None):
            refuse("the fused loop can only be split by a factor, once")
        _check_together(stage, split, made, refuse)
        for axis in made:
            how = stage.binds.get(axis) or stage.annotations.get(axis)
            if how not in (None, "parallel"):
                refuse(f"'{axis.name}' can be serial or parallel, not {how}")
        if isinstance(stage.attach, rec.ComputeAt) or stage.tensorized is not None:
            refuse("the stage must be computed at the root and not tensorized")
        _check_nothing_at(stage, made, refuse)
        found.append(FusedGroup(r, tuple(r.axes), split, made, split and split.factor))
    return found


def _made_of(stage: Stage, fuse: rec.Fuse) -> tuple[list, rec.Split | None, tuple[Axis, ...]]:
    """The relations that use `fuse`'s loop, its split (where that is the one), and the loops
    made of the fuse: the fused loop, or the two of its split."""
    later = [x for x in stage.relations if x is not fuse and _uses(x, (fuse.fused,))]
    split = later[0] if len(later) == 1 and isinstance(later[0], rec.Split) else None
    made = (fuse.fused,) if split is None else (split.outer, split.inner)
    return later, split, made


def _check_together(stage: Stage, split: rec.Split | None, made: tuple, refuse) -> None:
    """The loops made of a deferred fuse stay one nest: not split or fused further, nothing
    placed between them."""
    if split is not None and any(_uses(x, made) for x in stage.relations):
        refuse("the loops of its split cannot be split or fused further")
    leaves = stage.leaves
    if leaves[leaves.index(made[0]) : leaves.index(made[0]) + len(made)] != list(made):
        refuse("nothing can be placed between its loops (reorder)")


def _check_nothing_at(stage: Stage, made: tuple, refuse) -> None:
    """No stage computed at the loops made of a deferred fuse: isl never sees them."""
    for other in stage.schedule.stages:
        attach = other.attach
        if isinstance(attach, rec.ComputeAt) and attach.target == stage.name:
            if attach.axis in made:
                refuse(f"'{other.name}' cannot be computed at its loops")


def _tiles(stage: Stage, fuse: rec.Fuse, extents: dict[Axis, int | None]) -> bool:
    """Whether `fuse` fuses the tile loops of a stage computed at the root, three or more,
    with stages computed inside them or with tails. isl states such a fused index exactly, but
    the code it makes for a stage computed inside (a tile's fill) recovers each tile index by
    cases: a convolution's four tile loops fused gave six cases a fill, each origin a select
    of quasi-affine pieces, in 15 s of lowering at a 5 x 5 image. Across tails (splits that do
    not divide) the cases multiply with every loop fused: the four tile loops of a 65 x 65
    stage tiled by 8 took isl minutes."""
    if len(fuse.axes) < 3 or isinstance(stage.attach, rec.ComputeAt):
        return False
    leaves = stage.leaves
    later, split, made = _made_of(stage, fuse)
    if later and split is None:
        return False  # fused again: isl's exact map serves that
    if not all(a in leaves for a in made):
        return False
    if any(stage.binds.get(a, "").startswith("threadIdx") for a in made):
        return False  # the code generator's fused loop is no thread's: isl's index serves
    if _ragged(stage, extents) & set(fuse.axes):
        return True
    inside = set(leaves[leaves.index(made[-1]) + 1 :])
    return any(
        isinstance(other.attach, rec.ComputeAt)
        and other.attach.target == stage.name
        and other.attach.axis in inside
        for other in stage.schedule.stages
    )


def _ragged(stage: Stage, extents: dict[Axis, int | None]) -> set[Axis]:
    """The stage's loops whose range depends on the loops around them: the inner loop of a
    split that leaves a tail, and every loop made of one of them."""
    ragged: set[Axis] = set()
    for r in stage.relations:
        if isinstance(r, rec.Split):
            parent, outer, inner = (extents.get(a) for a in (r.parent, r.outer, r.inner))
            if r.parent in ragged:
                ragged |= {r.outer, r.inner}
            elif None in (parent, outer, inner) or outer * inner != parent:
                ragged.add(r.inner)
        elif any(a in ragged for a in r.axes):
            ragged.add(r.fused)
    return ragged


def _tile_group(stage: Stage, fuse: rec.Fuse, extents: dict[Axis, int | None]) -> FusedGroup:
    """A deferred fuse of tiles (`_tiles`), checked: its loops fuse one rectangular nest, split
    at most once, their outer loop serial, parallel or bound to a block index, and nothing
    computed at them or placed between them."""
    call = f"fuse({', '.join(a.name for a in fuse.axes)})"

    def refuse(what: str) -> None:
        raise FactorError(
            message(
                fuse.stage,
                call,
                fuse.loc,
                f"the code generator fuses these tile loops itself (isl's fused index would "
                f"recover them by cases in every stage computed inside), and {what}",
            )
        )

    later, split, made = _made_of(stage, fuse)
    if later and split is None:
        refuse("the fused loop can only be split, once")
    _check_together(stage, split, made, refuse)
    for k, axis in enumerate(made):
        bound = stage.binds.get(axis)
        how = bound or stage.annotations.get(axis)
        if k == 0 and bound is not None and bound.startswith("blockIdx"):
            continue
        if how not in (None, "parallel"):
            refuse(f"'{axis.name}' can be serial or parallel (the outer one bound to a block "
                   f"index), not {how}")  # fmt: skip
    _check_nothing_at(stage, made, refuse)
    factor = None
    if split is not None:
        factor = split.factor if split.factor is not None else extents[split.inner]
    return FusedGroup(fuse, tuple(fuse.axes), split, made, factor, tiles=True)


def isl_leaves(stage: Stage, extents: dict[Axis, int | None]) -> list[Axis]:
    """The loops isl schedules for `stage`, in order: its leaves, with the root loops of each
    deferred fuse where the loops made of it are."""
    groups = {g.leaves[0]: g for g in deferred_fuses(stage, extents)}
    hidden = {a for g in groups.values() for a in g.leaves}
    out: list[Axis] = []
    for a in stage.leaves:
        if a in groups:
            out += groups[a].components
        elif a not in hidden:
            out.append(a)
    return out


def _uses(relation, axes: tuple[Axis, ...]) -> bool:
    if isinstance(relation, rec.Split):
        return relation.parent in axes
    return any(a in axes for a in relation.axes)


def _deferred(relation: rec.Split, current: list[Axis]) -> tuple[isl.Map, list[Axis]]:
    """The parent's values on the outer loop's dimension, 0 on the inner's."""
    xs = _names("x", len(current))
    q = current.index(relation.parent)
    outs = xs[:q] + [xs[q], "0"] + xs[q + 1 :]
    text = f"{{ [{', '.join(xs)}] -> [{', '.join(outs)}] }}"
    return isl.Map(text), current[:q] + [relation.outer, relation.inner] + current[q + 1 :]


def _step(
    relation, current: list[Axis], extents: dict, fused: set[Axis]
) -> tuple[isl.Map, list[Axis]]:
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
        if fused & {relation.outer, relation.inner}:
            # A loop of it is fused with another's (tiles fused for a parallel loop): stated
            # as the floor and the remainder, it stays a division of the root index. As the
            # constraints above, isl eliminates it between the fuse's equality and the other
            # loops' splits, into one equality across all the loops, with coefficients in the
            # hundreds that every footprint computed at the fused loop then carries in its
            # pieces (TOPI's dense_pack took more than 10 minutes to place).
            outs[q : q + 2] = [f"floor({xs[q]} / {factor})", f"{xs[q]} mod {factor}"]
            text = f"{{ [{', '.join(xs)}] -> [{', '.join(outs)}] }}"
        return isl.Map(text), current[:q] + [relation.outer, relation.inner] + current[q + 1 :]
    if not relation.axes:  # fuse() of no loops: one iteration, outside the others
        text = f"{{ [{', '.join(xs)}] -> [{', '.join(['0', *xs])}] }}"
        return isl.Map(text), [relation.fused, *current]
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
