"""A register tile's rescale skipped where every factor a thread applies is 1.

An online scan rescales its running output each step, ``O = O * exp(m' - m)`` for every
element a thread holds (64 multiplications a step at head dim 128), but the factor is 1
wherever the row's maximum did not grow: at most steps on random scores (a block's maximum is a
new row maximum with a chance of about 1/t at step t), and at nearly all once the scan keeps a
reference maximum that follows the running one only past a threshold (`online(...,
threshold=)`, FlashAttention 4's lazy rescale). A thread holds few rows, so the factors it
applies are few values: each is computed, and the tile's rescale runs only where one of them is
not 1::

    for h, v, e (unrolled): O[h, v, e] = O[h, v, e] * f(v)
    ->  if f(0) != 1 or f(1) != 1: for h, v, e: O[h, v, e] = O[h, v, e] * f(v)

Exact: a product by 1 is its other operand (NaN stays NaN; a subnormal that a flushing
multiplication would have zeroed stays itself). Only nests of unrolled loops over register
buffers whose every statement is such a rescale are changed, and only where the factors are
few against the products they guard. The schedule asks for it on the loop whose steps hold the
rescales, ``s[update].pragma(step, "skip_unit_scales")``: the test and the branch cost
registers and a few instructions a step, paid back only where most rescales are skipped
(benchmarks/NOTES.md).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import product

from ...ir.expr import Binary, Compare, Const, Expr, Var, const, logical
from ...ir.printer import expr_str
from ..core.nodes import REGISTER_SCOPES, For, If, Load, Seq, Stmt, Store
from ..core.simplify import simplify_expr
from ..core.visit import stmt_children, substitute_expr, walk_expr, with_children
from .pragma_loops import rewrite_pragma_loops

_MOST_FACTORS = 4  # distinct factors a guard may test
_MOST_POINTS = 16  # values of the loops a factor depends on, tried to find them
_PRODUCTS_A_FACTOR = 4  # fewer products than this per factor: the test costs what it saves


def skip_unit_scales(body: Stmt, loops: dict[str, str]) -> Stmt:
    """`body` with each register rescale inside the loops named in `loops` (the axis's name
    -> its stage's, for a refusal) guarded by its factors' test (module doc); a
    `LoweringError` where such a loop holds none."""
    return rewrite_pragma_loops(body, loops, _within, "skip_unit_scales", _NO_RESCALE)


def _within(loop: For) -> Stmt | None:
    done = _guarded(loop.body)
    return None if done is loop.body else replace(loop, body=done)


_NO_RESCALE = (
    "holds no rescale of a register tile (each element times one of a few factors, X = X * "
    "f, in unrolled loops) to skip where its factors are 1; leave the pragma out, or give it "
    "on the loop of an online scan's steps"
)


def _guarded(body: Stmt) -> Stmt:
    factors = _factors(body)
    if factors is not None:
        test = logical("or", tuple(Compare("!=", f, const(1.0, f.dtype)) for f in factors))
        return If(test, body)
    kids = stmt_children(body)
    new = tuple(_guarded(k) for k in kids)
    return with_children(body, new) if any(a is not b for a, b in zip(new, kids)) else body


def _factors(s: Stmt) -> list[Expr] | None:
    """The distinct factors of `s`, a nest of unrolled loops of rescales; None where it is
    not one, or the test would not pay."""
    if not (isinstance(s, For) and s.kind == "unrolled" and s.thread is None):
        return None
    loops: dict[Var, range] = {}
    stores: list[tuple[Store, int]] = []  # each rescale and how many times it runs
    if not _collect(s, loops, stores, 1):
        return None
    written = {id(t.buffer) for t, _ in stores}
    found: dict[str, Expr] = {}
    for store, _ in stores:
        factor = _factor(store)
        if factor is None or any(
            isinstance(x, Load) and id(x.buffer) in written for x in walk_expr(factor)
        ):
            return None
        free = [v for v in loops if any(x is v for x in walk_expr(factor))]
        points = list(product(*(loops[v] for v in free)))
        if len(points) > _MOST_POINTS:
            return None
        for point in points:
            at = simplify_expr(substitute_expr(factor, dict(zip(free, map(const, point)))))
            found.setdefault(expr_str(at), at)
        if len(found) > _MOST_FACTORS:
            return None
    runs = sum(n for _, n in stores)
    return list(found.values()) if runs >= _PRODUCTS_A_FACTOR * len(found) else None


def _collect(s: Stmt, loops: dict, stores: list, times: int) -> bool:
    if isinstance(s, Seq):
        return all(_collect(k, loops, stores, times) for k in s.stmts)
    if isinstance(s, For):
        low, extent = s.min, s.extent
        if s.kind != "unrolled" or not isinstance(low, Const) or not isinstance(extent, Const):
            return False
        loops[s.var] = range(low.value, low.value + extent.value)
        return _collect(s.body, loops, stores, times * extent.value)
    if isinstance(s, Store) and s.buffer.scope in REGISTER_SCOPES:
        stores.append((s, times))
        return True
    return False


def _factor(store: Store) -> Expr | None:
    """f of the float32 ``X[i] = X[i] * f`` (either order); else None."""
    value = store.value
    if not (isinstance(value, Binary) and value.op == "*" and value.dtype == "float32"):
        return None
    for own, factor in ((value.a, value.b), (value.b, value.a)):
        if (
            isinstance(own, Load)
            and own.buffer is store.buffer
            and tuple(map(expr_str, own.indices)) == tuple(map(expr_str, store.indices))
        ):
            return factor
    return None
