"""Full unrolling of loops marked ``"unrolled"``.

An unrolled loop becomes one copy of its body per iteration, the loop variable replaced by a
constant, so that the copies' index arithmetic folds to constants (registers, immediate offsets).
That needs the trip count at compile time: a loop whose extent is symbolic (a tail, a size) is an
error that tells the user to split by a constant factor first.
"""

from __future__ import annotations

from collections.abc import Callable

from ...errors import LoweringError
from ...ir.expr import Const, Expr, Var, binary
from ...ir.printer import expr_str
from ..core.nodes import For, Seq, Stmt, seq
from ..core.simplify import simplify, simplify_expr
from ..core.visit import Memo, rebuild_stmt, substitute_expr


def unroll_loops(
    stmt: Stmt, memo: Memo | None = None, keep: Callable[[For], bool] | None = None
) -> Stmt:
    """`stmt` with every ``For`` of kind ``"unrolled"`` replaced by copies of its body, except
    those `keep` accepts, which stay loops (for the code generator to have unrolled).

    Expects the extent of each unrolled loop to fold to a constant (`simplify_expr`) once the
    enclosing unrolled loops have been replaced; raises `LoweringError` otherwise. Outer loops
    are unrolled first, so an inner loop's extent may depend on an outer unrolled variable.
    Guarantees: no loop of kind ``"unrolled"`` is left but those kept, the effect on memory is
    unchanged, and the result is simplified (`simplify`, with its `memo`).
    """
    return simplify(_unroll(stmt, {}, {}, keep), memo)


def _unroll(s: Stmt, values: dict[Var, Expr], memo: Memo, keep) -> Stmt:
    """`s` unrolled, with the variables of the unrolled loops around it replaced by their
    `values` (`memo` caches that substitution). Substituting once per copy at the leaves,
    rather than copying and simplifying each level of a nest in turn, keeps deep
    register-tile nests linear in their size."""
    if isinstance(s, For) and s.kind == "unrolled" and (keep is None or not keep(s)):
        return _unroll_loop(s, values, memo, keep)

    def ex(e: Expr) -> Expr:
        return substitute_expr(e, values, memo) if values else e

    return rebuild_stmt(s, ex, lambda child: _unroll(child, values, memo, keep))


def _unroll_loop(s: For, values: dict[Var, Expr], memo: Memo, keep) -> Stmt:
    low = simplify_expr(substitute_expr(s.min, values, memo))
    extent = simplify_expr(substitute_expr(s.extent, values, memo))
    if not isinstance(extent, Const):
        raise LoweringError(
            f"cannot unroll the loop over '{s.var.name}': its extent {expr_str(extent)} is not "
            "a constant, and unroll needs a constant extent; split the axis by a constant factor "
            f"first (e.g. split({s.var.name}, factor=4)) and unroll the inner loop"
        )
    copies = [
        _unroll(s.body, {**values, s.var: simplify_expr(binary("+", low, k))}, {}, keep)
        for k in range(int(extent.value))
    ]
    return seq(*copies) if copies else Seq(())
