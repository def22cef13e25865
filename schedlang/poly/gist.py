"""A condition simplified by what is known where it is tested (isl's ``gist``).

Asked by `loopir.loops.gist_guards` for the guards and selects of a kernel's loop nest. Every
variable is a parameter; what is known of them is the ranges of the loops around the
condition and the guards it sits under. The answer keeps only the constraints of the
condition that those do not already imply: a key's bound below the length in a block that
ends before it, a warpgroup's test implied by the element's own.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..ir.expr import Expr, Var
from ..ir.visit import walk
from .affine import NonAffine, aff_text, cond_text
from .first_failing import Span


@dataclass(frozen=True)
class Gist:
    """`cond`: the condition's simplified set, under `context`; `params`: isl name -> variable."""

    cond: isl.Set
    context: isl.Set
    params: dict[str, Var]

    @property
    def always(self) -> bool:
        return self.context.is_subset(self.cond)

    @property
    def never(self) -> bool:
        return self.cond.intersect(self.context).is_empty()


def gist(cond: Expr, loops: list[Span], known: list[Expr]) -> Gist | None:
    """`cond` as far as `loops` (their ranges) and the conditions `known` leave it open; None
    where `cond` is not quasi-affine. Known conditions that are not are left out."""
    exprs = [cond, *known, *(x for s in loops for x in (s.var, s.min, s.extent))]
    names = {v: f"p{k}" for k, v in enumerate(dict.fromkeys(_vars(exprs)))}
    try:
        text = cond_text(cond, names)
    except NonAffine:
        return None
    facts = []
    for s in loops:
        try:
            low, end = aff_text(s.min, names), aff_text(s.extent, names)
        except NonAffine:
            continue
        facts.append(f"{low} <= {names[s.var]} < {low} + {end}")
    for k in known:
        try:
            facts.append(cond_text(k, names))
        except NonAffine:
            continue
    header = f"[{', '.join(names.values())}] ->"
    context = isl.Set(f"{header} {{ : {' and '.join(facts) or '0 = 0'} }}")
    simplified = isl.Set(f"{header} {{ : {text} }}").gist(context).coalesce()
    return Gist(simplified, context, {name: v for v, name in names.items()})


def _vars(exprs: list[Expr]):
    for e in exprs:
        for x in walk(e):
            if isinstance(x, Var):
                yield x


__all__ = ["Gist", "gist"]
