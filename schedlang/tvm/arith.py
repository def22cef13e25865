"""``tvm.arith.Analyzer``: the simplification TOPI applies to the extents it computes."""

from __future__ import annotations

from ..ir.expr import Expr
from ..loopir.core.simplify import simplify_expr


class Analyzer:
    """Simplifies expressions: integer arithmetic on constants is folded (``5 + 5`` is 10)."""

    def simplify(self, expr, steps: int = 2):
        return simplify_expr(expr) if isinstance(expr, Expr) else expr

    canonical_simplify = simplify
    rewrite_simplify = simplify
