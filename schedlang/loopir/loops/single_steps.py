"""Serial loops that run exactly once wherever they are reached, replaced by their body.

isl states a loop of one iteration as its body where it sees the bounds meet. Over a
persistent block's tiles it may not: the diagonal step of a causal tile runs from
``t - 32 * (t // 32) + 1`` to ``-((2047 - t) % 32) + 33`` for the tile ``t``, one step in two
forms. Kept as a loop, the step's registers live across a turn that never comes, and ptxas
ran out of them (attention, d = 128: 255 registers and 296 bytes spilled, against 207 where a
block has one tile and the step is straight code). isl proves the extent 1 over the loops
around (`poly.runs_once`); the body then runs at the loop's first value.
"""

from __future__ import annotations

from ...ir.expr import Const
from ...poly.first_failing import Span
from ...poly.runs_once import runs_once
from ..core.nodes import For, Stmt
from ..core.simplify import simplify
from ..core.visit import rebuild_stmt, substitute_stmt


def peel_single_steps(stmt: Stmt) -> Stmt:
    """`stmt` with each serial loop of a symbolic extent that is 1 at every point of the loops
    around it replaced by its body at its first value (module doc)."""
    return _walk(stmt, [])


def _walk(s: Stmt, around: list[Span]) -> Stmt:
    if isinstance(s, For):
        span = Span(s.var, s.min, s.extent)
        if s.kind == "serial" and not isinstance(s.extent, Const) and runs_once(span, around):
            return _walk(simplify(substitute_stmt(s.body, {s.var: s.min})), around)
        inner = [*around, span]
        return rebuild_stmt(s, lambda e: e, lambda k: _walk(k, inner))
    return rebuild_stmt(s, lambda e: e, lambda k: _walk(k, around))
