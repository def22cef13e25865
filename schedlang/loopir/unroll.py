"""Full unrolling of loops marked ``"unrolled"``.

An unrolled loop becomes one copy of its body per iteration, the loop variable replaced by a
constant, so that the copies' index arithmetic folds to constants (registers, immediate offsets).
That needs the trip count at compile time: a loop whose extent is symbolic (a tail, a size) is an
error that tells the user to split by a constant factor first.
"""

from __future__ import annotations

from ..errors import LoweringError
from ..ir.expr import Const, binary
from ..ir.printer import expr_str
from .nodes import Allocate, For, If, Let, Seq, Stmt, seq
from .simplify import simplify, simplify_expr
from .visit import substitute_stmt


def unroll_loops(stmt: Stmt) -> Stmt:
    """`stmt` with every ``For`` of kind ``"unrolled"`` replaced by copies of its body.

    Expects the extent of each unrolled loop to fold to a constant (`simplify_expr`) once the
    enclosing unrolled loops have been replaced; raises `LoweringError` otherwise. Outer loops
    are unrolled first, so an inner loop's extent may depend on an outer unrolled variable.
    Guarantees: no loop of kind ``"unrolled"`` is left, the effect on memory is unchanged, and
    the result is simplified (`simplify`).
    """
    return simplify(_unroll(stmt))


def _unroll(s: Stmt) -> Stmt:
    if isinstance(s, For):
        if s.kind == "unrolled":
            return _unroll_loop(s)
        return For(s.var, s.min, s.extent, s.kind, _unroll(s.body), s.thread)
    if isinstance(s, If):
        otherwise = None if s.otherwise is None else _unroll(s.otherwise)
        return If(s.cond, _unroll(s.then), otherwise)
    if isinstance(s, Let):
        return Let(s.var, s.value, _unroll(s.body))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, _unroll(s.body))
    if isinstance(s, Seq):
        return Seq(tuple(_unroll(x) for x in s.stmts))
    return s


def _unroll_loop(s: For) -> Stmt:
    extent = simplify_expr(s.extent)
    if not isinstance(extent, Const):
        raise LoweringError(
            f"cannot unroll the loop over '{s.var.name}': its extent {expr_str(extent)} is not "
            "a constant, and unroll needs a constant extent; split the axis by a constant factor "
            f"first (e.g. split({s.var.name}, factor=4)) and unroll the inner loop"
        )
    copies = []
    for k in range(int(extent.value)):
        value = simplify_expr(binary("+", s.min, k))
        body = simplify(substitute_stmt(s.body, {s.var: value}))
        copies.append(_unroll(body))
    return seq(*copies) if copies else Seq(())
