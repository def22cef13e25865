"""Whether a loop nest of stores copies one box of a tensor: isl's proof for bulk copies.

The copy engine (`loopir.memory.bulk_pipeline`) replaces a staged tile's fill, a loop nest that
stores ``dst[d(i)] = src[s(i)]``, by one copy of the box of ``src`` at an origin: it is the same
copy only if each store reads ``src`` at the origin plus the index it writes, and the stores cover
the destination's box (``[0, shape)``) wherever the origin plus the index lies inside the
tensor. At the tensor's edge a fill either leaves the rest of its box unwritten or clamps its
reads (``min(index, last)``) and reads the last element again there; the copy engine writes
zeros instead, so the proof asks for the equality of the reads only inside the tensor (what a
fill writes outside it feeds only results that no output keeps). The fill's loop variables
are isl's set dimensions, every other variable (block indices, the refill loop's, sizes) a
parameter, so the proof holds for every block and size.
"""

from __future__ import annotations

from collections.abc import Sequence

import islpy as isl

from ..ir.expr import Expr, Var
from ..ir.visit import walk
from .affine import NonAffine, aff_text, cond_text


def box_copy_mismatch(
    loops: Sequence[tuple[Var, Expr, Expr]],
    guards: Sequence[Expr],
    dst_idx: Sequence[Expr],
    src_idx: Sequence[Expr],
    origin: Sequence[Expr],
    src_shape: Sequence[Expr],
    shape: Sequence[int],
    when: Expr | None = None,
    context: Sequence[tuple[Var, Expr, Expr]] = (),
    defined: Sequence[tuple[Var, Expr]] = (),
) -> str | None:
    """None when the stores of the nest (`loops`: variable, first value, extent, affine in
    the variables outside; under `guards`) copy the box of `shape` elements of the source at
    `origin` as the module says, else why not, for every iteration of the loops of `context`
    around the nest (the same form). With `when`, a store reads only where it holds
    and writes zeros elsewhere: the copy engine's zero fill, if it holds exactly where the
    element lies inside the source (padding). Raises `NonAffine` for an index, bound, guard
    or condition isl cannot represent. `defined`: the variables of lets around the nest and
    their values (a fused tile loop's indices, by division and modulo), as known as the loops
    of `context`."""
    names: dict[Var, str] = {var: f"i{k}" for k, (var, _, _) in enumerate(loops)}
    params: list[str] = []
    ends = [e for var, lo, n in (*loops, *context) for e in (var, lo, n)]
    ends += [e for var, value in defined for e in (var, value)]
    conds = () if when is None else (when,)
    for e in (*dst_idx, *src_idx, *origin, *src_shape, *guards, *ends, *conds):
        for n in walk(e):
            if isinstance(n, Var) and n not in names:
                names[n] = f"p{len(params)}"
                params.append(names[n])
    dims = ", ".join(names[var] for var, _, _ in loops)

    def ranges(nest: Sequence[tuple[Var, Expr, Expr]]) -> list[str]:
        return [
            f"{aff_text(lo, names)} <= {names[var]} < {aff_text(lo, names)} + {aff_text(n, names)}"
            for var, lo, n in nest
        ]

    known = []  # the loops around whose bounds isl can read; the others say nothing
    for loop in context:
        try:
            known += ranges([loop])
        except NonAffine:
            pass
    for var, value in defined:
        try:
            known.append(f"{names[var]} = {aff_text(value, names)}")
        except NonAffine:
            pass
    around = " and ".join(known) or "true"
    bounds = [around, *ranges(loops), *(f"({cond_text(g, names)})" for g in guards)]
    domain = " and ".join(bounds)
    head = f"[{', '.join(params)}] -> "
    dst = [aff_text(i, names) for i in dst_idx]
    at = [f"({aff_text(o, names)}) + ({d})" for o, d in zip(origin, dst)]
    inside = " and ".join(f"0 <= {a} < {aff_text(n, names)}" for a, n in zip(at, src_shape))
    differ = " or ".join(f"{aff_text(s, names)} != {a}" for s, a in zip(src_idx, at))
    covered = isl.Map(f"{head}{{ [{dims}] -> [{', '.join(dst)}] : {domain} }}").range()
    box_dims = ", ".join(f"d{k}" for k in range(len(shape)))
    box = " and ".join(f"0 <= d{k} < {n}" for k, n in enumerate(shape))
    in_tensor = " and ".join(
        f"0 <= ({aff_text(o, names)}) + d{k} < {aff_text(n, names)}"
        for k, (o, n) in enumerate(zip(origin, src_shape))
    )
    whole = isl.Set(f"{head}{{ [{box_dims}] : {box} }}")
    needed = isl.Set(f"{head}{{ [{box_dims}] : {box} and {in_tensor} and {around} }}")
    if not (covered.is_subset(whole) and needed.is_subset(covered)):
        return (
            "its fill does not write the whole buffer (the part inside the tensor) for every "
            "size and tile isl can see; pipeline it without tma (cp.async), or stage a tile "
            "of whole 128-byte rows"
        )
    if when is not None:
        padded = cond_text(when, names)
        for text in (f"({padded}) and not ({inside})", f"not ({padded}) and ({inside})"):
            if not isl.Set(f"{head}{{ [{dims}] : {domain} and {text} }}").is_empty():
                return (
                    "its fill pads with zeros where the copy engine would not (zeros inside the "
                    "tensor, or reads outside it); the copy engine pads only outside the tensor"
                )
    off = isl.Set(f"{head}{{ [{dims}] : {domain} and {inside} and ({differ}) }}")
    if not off.is_empty():
        return (
            "its fill does not read the tensor at one offset from where it writes (a "
            "transposed or strided read); the copy engine copies a box as it is"
        )
    return None


def reads_beyond(
    loops: Sequence[tuple[Var, Expr, Expr]],
    extra: tuple[Var, Expr, Expr],
    starts: Sequence[tuple[Expr, Expr]],
) -> bool:
    """Whether every iteration of ``extra`` (a loop variable, its first iteration beyond the
    loop's own extent, and the end of its widened range) starts each of its reads beyond its
    tensor: `starts` holds, per read, the coordinate where it starts and the tensor's extent
    along that dimension; `loops` bound the variables outside (everything else is a
    parameter). Raises `NonAffine` for what isl cannot represent."""
    var, first, end = extra
    names: dict[Var, str] = {v: f"o{k}" for k, (v, _, _) in enumerate(loops)}
    names[var] = "x"
    params: list[str] = []
    exprs = [first, end, *(e for _, lo, n in loops for e in (lo, n))]
    for e in (*exprs, *(e for pair in starts for e in pair)):
        for n in walk(e):
            if isinstance(n, Var) and n not in names:
                names[n] = f"p{len(params)}"
                params.append(names[n])
    dims = ", ".join(names[v] for v, _, _ in loops) + (", x" if loops else "x")
    bounds = [
        f"{aff_text(lo, names)} <= {names[v]} < {aff_text(lo, names)} + {aff_text(n, names)}"
        for v, lo, n in loops
    ]
    bounds.append(f"{aff_text(first, names)} <= x < {aff_text(end, names)}")
    inside = " or ".join(f"{aff_text(at, names)} < {aff_text(n, names)}" for at, n in starts)
    head = f"[{', '.join(params)}] -> "
    return isl.Set(f"{head}{{ [{dims}] : {' and '.join(bounds)} and ({inside}) }}").is_empty()
