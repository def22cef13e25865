"""Guards and selects of register tiles reduced to what the loops and guards around them
leave open.

Where a schedule splits a loop into a block's steps and its diagonal step (causal attention),
isl's code keeps, per element of a thread's register tile, every constraint of the mask and
of the keys' bound: ``lane % 4 * 2 + 8 h + e + 128 i - 128 < 1024 and ... <= 128 i + ...``,
under a guard on the warpgroup's rows with a division by 64, in each of the step's three
stages. Most of it is implied by the ranges of the loops around it (the last block ends at
the length) or by the element's own test (a warpgroup with a key at or below some row of its
own). Each condition inside a tile's element loops (unrolled or vectorized: a compare per
element) is replaced by isl's ``gist`` of it under those facts, where that is shorter and no
more of a union: the diagonal's mask becomes one comparison per element, of a thread's value
and a constant once the element loops are unrolled. A guard directly inside another is
simplified under it, the outer one under the inner (nothing runs when the inner one fails).
Conditions outside element loops are left as they are: later passes version loops on them.
"""

from __future__ import annotations

from ...ir.expr import Binary, Compare, Expr, Select, Unary
from ...ir.visit import walk
from ...poly.first_failing import Span
from ...poly.gist import gist
from ..core.nodes import For, If, Let, Stmt, seq
from ..core.visit import rebuild_stmt, transform_expr, walk_stmt
from ..from_isl import set_expr
from ..memory.fragments import is_wgmma

ELEMENT_LOOPS = ("unrolled", "vectorized")


def gist_guards(stmt: Stmt) -> Stmt:
    """`stmt` with each guard and select of its element loops simplified by its context
    (module doc): the same effect at every point its loops reach. Kernels of warpgroup
    products only, whose register tiles are the fragments' (other register tiles lose their
    guards to `gpu.register_guards` and `loops.full_tiles`, which read them as isl wrote
    them)."""
    if not any(is_wgmma(s) for s in walk_stmt(stmt)):
        return stmt
    return _walk(stmt, [], [], False)


def _walk(s: Stmt, loops: list[Span], known: list[Expr], element: bool) -> Stmt:
    def exprs(e: Expr) -> Expr:
        return _selects(e, loops, known) if element else e

    if isinstance(s, For):
        inner = [*loops, Span(s.var, s.min, s.extent)]
        within = element or s.kind in ELEMENT_LOOPS
        return rebuild_stmt(s, exprs, lambda k: _walk(k, inner, known, within))
    if isinstance(s, Let):
        fact = Compare("==", s.var, s.value) if s.value.dtype.startswith("int") else None
        inner_known = [*known, fact] if fact is not None else known
        return rebuild_stmt(s, exprs, lambda k: _walk(k, loops, inner_known, element))
    if isinstance(s, If) and element:
        return _guard(s, loops, known)
    if isinstance(s, If):  # what it ensures is known inside it
        then = _walk(s.then, loops, [*known, s.cond], element)
        negated = Unary("not", s.cond, "bool")
        otherwise = (
            None if s.otherwise is None else _walk(s.otherwise, loops, [*known, negated], element)
        )
        if then is s.then and otherwise is s.otherwise:
            return s
        return If(s.cond, then, otherwise)
    return rebuild_stmt(s, exprs, lambda k: _walk(k, loops, known, element))


def _guard(s: If, loops: list[Span], known: list[Expr]) -> Stmt:
    cond = s.cond
    nested = s.then if isinstance(s.then, If) and s.then.otherwise is None else None
    if s.otherwise is None and nested is not None:  # the outer test where the inner holds
        cond = _simplified(cond, loops, [*known, nested.cond])
    else:
        cond = _simplified(cond, loops, known)
    if cond is True:
        return _walk(s.then, loops, known, True)
    if cond is False:
        return seq() if s.otherwise is None else _walk(s.otherwise, loops, known, True)
    then = _walk(s.then, loops, [*known, cond], True)
    otherwise = None
    if s.otherwise is not None:
        otherwise = _walk(s.otherwise, loops, [*known, Unary("not", cond, "bool")], True)
    if cond is s.cond and then is s.then and otherwise is s.otherwise:
        return s
    return If(cond, then, otherwise)


def _selects(e: Expr, loops: list[Span], known: list[Expr]) -> Expr:
    def select(x: Expr) -> Expr | None:
        if not isinstance(x, Select):
            return None
        cond = _simplified(x.cond, loops, known)
        if cond is True:
            return x.true_value
        if cond is False:
            return x.false_value
        return None if cond is x.cond else Select(cond, x.true_value, x.false_value, x.dtype)

    return transform_expr(e, select)


def _simplified(cond: Expr, loops: list[Span], known: list[Expr]) -> Expr | bool:
    """True or False where `known` and the loops decide `cond`; otherwise isl's gist of it
    where that is shorter and no more of a union, else `cond`."""
    found = gist(cond, loops, known)
    if found is None:
        return cond
    if found.always:
        return True
    if found.never:
        return False
    shorter = set_expr(found.cond, found.context, found.params, _index_dtype(cond))
    if _choices(shorter) > _choices(cond):
        return cond
    return shorter if _size(shorter) < _size(cond) else cond


def _choices(e: Expr) -> int:
    """The unions and case splits in `e`: later passes version loops on conjunctions."""
    return sum(
        1
        for x in walk(e)
        if isinstance(x, Select) or (isinstance(x, Binary) and x.op in ("or", "min", "max"))
    )


def _index_dtype(cond: Expr) -> str:
    for x in walk(cond):
        if isinstance(x, Binary) and x.dtype.startswith("int"):
            return x.dtype
    return "int32"


def _size(e: Expr) -> int:
    return sum(1 for _ in walk(e))
