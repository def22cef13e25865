"""A compute_at footprint stated as its box where the two are the same set.

The footprint of a stage computed at a consumer's loop is the union of the images of the
consumer's reads, one per read. isl coalesces two pieces only where their union is convex, so
a stencil's taps at diagonal offsets (a demosaic's X of centre and four corners) stay five
pieces although together they cover the box, and at a tile that overhangs the image's edge
each carries its own clamp. Those pieces become the producer's domain, its loops map and its
readers' footprint one stage further up, where they multiply by the next stage's taps: a chain
of such stages took minutes to place at depth 4.

The box (per dimension, the footprint's minimum to its maximum, as functions of the loops
around it) is one piece, or a few where the bounds have cases at the edge. It replaces the
footprint where isl shows it has no other element (`exact_box`), so that what the producer
computes is unchanged. Where the footprint still has more than `PIECES_KEPT` pieces (taps
that leave holes in a tile at the image's edge), the producer computes the box, as TE does
everywhere, provided the box lies in its domain (`simplest`); a stage stored whole in an
argument keeps its exact footprint. A placement whose maps still pass `SIZE_LIMIT` is refused
with an error naming the compute_at (`too_large`) rather than lowered for minutes.
"""

from __future__ import annotations

import islpy as isl

#: The size (pieces, and the existential variables of each) that a compute_at footprint, or
#: the map of a stage's loops computed there, may have. Everything isl does later (the corner
#: of the box as a function, the readers' footprints further up, dependences, the loop nest)
#: grows faster than that size, the more so the deeper the nest of stages computed inside
#: one another: a stencil chain whose loop maps reached 261 pieces did not lower in 10
#: minutes, while a footprint of 210 separate elements at one loop lowers in 7 s. The
#: schedules of the test suite stay under 10.
SIZE_LIMIT = 1000

#: Pieces of an exact footprint kept as they are. More come from reads at offsets that leave
#: holes in a tile at the edge (a demosaic's X of taps over a tile one wide); the producer
#: then computes the box around them, as TE does everywhere: at most a few elements more at
#: the edge, against pieces that multiply with every stage computed inside it.
PIECES_KEPT = 2


def simplest(
    needed: isl.Map, bmin: list[isl.PwAff], bmax: list[isl.PwAff], domains: list[isl.Set] | None
) -> isl.Map:
    """What the producer computes at each prefix point: `needed` itself, or as one convex
    piece or its box where that is the same set (`exact_box`); or, where it is still more
    than `PIECES_KEPT` pieces, its box, if every `domains` (the producer's statements', data
    dimensions first) holds the box (None: only exactly)."""
    exact = exact_box(needed, bmin, bmax)
    if domains is None or exact.n_basic_map() <= PIECES_KEPT:
        return exact
    box = _between(needed, bmin, bmax)
    tensor = needed.get_tuple_name(isl.dim_type.out)
    nd = len(bmin)
    for domain in domains:
        n = domain.dim(isl.dim_type.set)
        data = domain.project_out(isl.dim_type.set, nd, n - nd).set_tuple_name(tensor)
        if not box.range().is_subset(data):
            return exact
    return box


def exact_box(needed: isl.Map, bmin: list[isl.PwAff], bmax: list[isl.PwAff]) -> isl.Map:
    """`needed` (``[prefix] -> T[x]``) as one convex piece, or as the box between `bmin` and
    `bmax` (its per-dimension bounds over the prefix), when that has no other element; else
    `needed` itself."""
    if needed.n_basic_map() <= 1 or not bmin:
        return needed
    for hull in (_simple_hull, _between):
        candidate = hull(needed, bmin, bmax)
        if candidate.n_basic_map() < needed.n_basic_map() and candidate.is_subset(needed):
            return candidate
    return needed


def footprint_size(needed: isl.Map) -> int:
    """Pieces plus their existential variables: what isl's work on `needed` grows with."""
    return sum(1 + piece.dim(isl.dim_type.div) for piece in needed.get_basic_maps())


def division_depth(relation: isl.Map) -> int:
    """How deep `relation`'s integer divisions nest: 0 without any, 1 for ``floor(i / 8)``, 2
    for a floor of an expression holding a floor. isl's bounds of a relation whose divisions
    nest grow fast with each level (a tile index through a fuse of fused loops and a split)."""
    deepest = 0
    for piece in relation.wrap().get_basic_sets():
        n = piece.dim(isl.dim_type.div)
        uses = [_used_divisions(piece, k, n) for k in range(n)]
        levels = [1] * n
        for _ in range(n):  # a division is defined by others, never by itself: n passes settle
            levels = [1 + max((levels[j] for j in used), default=0) for used in uses]
        deepest = max([deepest, *levels])
    return deepest


def division_count(relation: isl.Map) -> int:
    """How many integer divisions `relation`'s pieces hold in all. A footprint through a split
    with a tail of a fuse of split loops can hold hundreds, where isl's bounds take hours."""
    return sum(piece.dim(isl.dim_type.div) for piece in relation.wrap().get_basic_sets())


def _used_divisions(piece: isl.BasicSet, k: int, n: int) -> list[int]:
    """The other divisions division `k` of `piece` is defined by; none where isl knows only
    that the division exists (an existential variable with no expression)."""
    try:
        div = piece.get_div(k)
    except isl.Error:
        return []
    coefficient = lambda j: div.get_coefficient_val(isl.dim_type.div, j)  # noqa: E731
    return [j for j in range(n) if j != k and not coefficient(j).is_zero()]


def too_large(relation: isl.Map, producer: str, what: str) -> str | None:
    """Why placing `producer` would take minutes, with `what` saying what `relation` is, or
    None when it will not."""
    size = footprint_size(relation)
    if size <= SIZE_LIMIT:
        return None
    pieces = relation.n_basic_map()
    return (
        f"isl states {what} in {pieces} pieces with {size - pieces} existential variables "
        f"(more than {SIZE_LIMIT} in all), and lowering from there would take minutes; "
        f"compute '{producer}' at an outer loop, at root (compute_root()), or inline it"
    )


def _simple_hull(needed: isl.Map, bmin: list[isl.PwAff], bmax: list[isl.PwAff]) -> isl.Map:
    return isl.Map.from_basic_map(needed.simple_hull())


def _between(needed: isl.Map, bmin: list[isl.PwAff], bmax: list[isl.PwAff]) -> isl.Map:
    """``[prefix] -> T[x] : bmin(prefix) <= x <= bmax(prefix)`` over `needed`'s prefix."""
    nd = len(bmin)
    xs = [f"x{d}" for d in range(nd)]
    box = isl.Map.from_domain(needed.domain()).add_dims(isl.dim_type.out, nd)
    for d in range(nd):
        for bound, sign in ((bmin[d], ">="), (bmax[d], "<=")):
            # prefix -> [v] (the bound), then [v] -> [x...] with x_d on the right side of it.
            side = isl.Map(f"{{ [v] -> [{', '.join(xs)}] : {xs[d]} {sign} v }}")
            side = side.align_params(needed.get_space())
            box = box.intersect(isl.Map.from_pw_aff(bound).apply_range(side))
    box = box.set_tuple_id(isl.dim_type.out, needed.get_tuple_id(isl.dim_type.out))
    return box.coalesce()
