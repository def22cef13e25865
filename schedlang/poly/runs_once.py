"""Whether a loop runs exactly once at every point of the loops around it.

Asked by `loopir.loops.single_steps`. The loops around are isl set dimensions, each ranging
over its own bounds (which may name the loops further out); any other variable (a size) is a
parameter. A bound isl cannot state (a value loaded from memory) answers no.
"""

from __future__ import annotations

import islpy as isl

from ..ir.expr import Binary, Var
from ..ir.visit import walk
from .affine import NonAffine, aff_text
from .first_failing import Span


def runs_once(loop: Span, around: list[Span]) -> bool:
    """Whether `loop`'s extent is 1 wherever the loops `around` (outermost first) reach."""
    exprs = [loop.min, loop.extent, *(x for s in around for x in (s.min, s.extent))]
    names = {s.var: f"v{k}" for k, s in enumerate(around)}
    params: dict[Var, str] = {}
    for v in (x for e in exprs for x in walk(e) if isinstance(x, Var)):
        if v not in names and v not in params:
            params[v] = f"p{len(params)}"
    named = {**names, **params}
    try:
        ranges = [
            f"{aff_text(s.min, named)} <= {names[s.var]} < "
            f"{aff_text(Binary('+', s.min, s.extent, s.min.dtype), named)}"
            for s in around
        ]
        extent = aff_text(loop.extent, named)
    except NonAffine:
        return False
    dims = ", ".join(names[s.var] for s in around)
    header = f"[{', '.join(params.values())}] -> "
    where = " and ".join([*ranges, f"{extent} != 1"]) if ranges else f"{extent} != 1"
    return isl.Set(f"{header}{{ [{dims}] : {where} }}").is_empty()


__all__ = ["runs_once"]
