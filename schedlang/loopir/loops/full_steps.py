"""A loop of warpgroup products split where the guards inside it start to fail.

Under a causal mask, attention's loop over blocks of keys holds a guard per element of each
thread's score tile (the key at or below the row), and a guard that skips a warpgroup's
scores above the diagonal. They hold at every block below the diagonal and fail only in the
last one or two: each is a compare per element, and a guard around a product makes ptxas wait
for it before the next. FlashAttention runs the masked blocks in a loop of their own.

This pass does so for any serial loop holding warpgroup products: it finds, with isl, the
first step at which a guard (or select) that varies with the threads or the loops inside may
fail for some thread, the loops around taken as parameters, and splits the loop there. The
steps before run a copy of the body with those conditions decided, the rest the body as it
was. The split point depends on no thread's index, so every thread of a block runs both loops
alike and meets their barriers.
"""

from __future__ import annotations

import islpy as isl

from ...ir.expr import Binary, Expr, Select, Var
from ...poly.affine import NonAffine, aff_text, cond_text
from ..core.nodes import For, If, Let, Stmt, seq
from ..core.visit import (
    rebuild_stmt,
    stmt_children,
    stmt_exprs,
    transform_expr,
    walk_expr,
    walk_stmt,
)
from ..from_isl import param_expr
from ..memory.fragments import is_wgmma

_THREADS = ("threadIdx", "vthread")


def split_full_steps(stmt: Stmt) -> Stmt:
    """`stmt` with each serial loop of warpgroup products split before the first step where
    a guard varying inside it may fail (module doc)."""
    if not any(is_wgmma(s) for s in walk_stmt(stmt)):
        return stmt  # most kernels: nothing to look for
    return _walk(stmt, {}, {})


def _walk(s: Stmt, threads: dict[Var, For], outer: dict[Var, For]) -> Stmt:
    if isinstance(s, For) and s.kind == "serial" and any(map(is_wgmma, walk_stmt(s.body))):
        split = _split(s, threads, outer)
        if split is not None:
            return split
    if isinstance(s, For) and s.thread is not None and s.thread.startswith(_THREADS):
        threads = {**threads, s.var: s}
    elif isinstance(s, For):
        outer = {**outer, s.var: s}
    return rebuild_stmt(s, lambda e: e, lambda k: _walk(k, threads, outer))


def _split(loop: For, threads: dict[Var, For], outer: dict[Var, For]) -> Stmt | None:
    conds = _conditions(loop, threads)
    if not conds:
        return None
    names = _Names(loop.var)
    failing = None
    decided = set()
    for cond, around in conds:
        bad = _failing(loop, cond, around, names)
        if bad is None or bad.is_equal(_range(loop, names)):
            continue  # not affine, or never true at every thread: it stays a guard
        decided.add(id(cond))
        failing = bad if failing is None else failing.union(bad)
    if not decided:
        return None
    first = failing.union(_range(loop, names, last=True)).dim_min(0)
    params = _context(names, outer)
    split = param_expr(first.gist_params(params).coalesce(), params, names.params, loop.var.dtype)
    upper = Binary("+", loop.min, loop.extent, loop.var.dtype)
    full = For(
        loop.var,
        loop.min,
        Binary("-", split, loop.min, loop.var.dtype),
        loop.kind,
        _decide(loop.body, decided),
        loop.thread,
    )
    rest = For(
        loop.var, split, Binary("-", upper, split, loop.var.dtype), loop.kind, loop.body, None
    )
    return seq(full, rest)


def _conditions(loop: For, threads: dict[Var, For]) -> list[tuple[Expr, list[For]]]:
    """The guards' and selects' conditions in `loop` that read its variable and a thread's
    or an inner loop's, each with the loops around it (inside `loop`, and the threads')."""
    found: list[tuple[Expr, list[For]]] = []

    def visit(s: Stmt, around: list[For]) -> None:
        inner = [*around, s] if isinstance(s, For) else around
        for e in stmt_exprs(s):
            for x in walk_expr(e):
                if isinstance(x, Select):
                    note(x.cond, around)
        if isinstance(s, If):
            note(s.cond, around)
        if isinstance(s, Let):
            return  # a value the conditions below may read: left alone
        for k in stmt_children(s):
            visit(k, inner)

    def note(cond: Expr, around: list[For]) -> None:
        free = {x for x in walk_expr(cond) if isinstance(x, Var)}
        varying = {f.var for f in around} | set(threads)
        if loop.var in free and free & varying:
            found.append((cond, [*threads.values(), *around]))

    visit(loop.body, [])
    return found


class _Names:
    """isl names: the loop's variable ``t``, the loops' ``v<k>``, anything else a parameter."""

    def __init__(self, step: Var) -> None:
        self.step = step
        self.params: dict[str, Var] = {}
        self._by_var: dict[Var, str] = {}

    def of(self, loops: list[For], free: set[Var]) -> dict[Var, str]:
        names = {self.step: "t"}
        names.update({f.var: f"v{k}" for k, f in enumerate(loops)})
        for v in free - set(names):
            if v not in self._by_var:
                self._by_var[v] = f"p{len(self._by_var)}"
                self.params[self._by_var[v]] = v
            names[v] = self._by_var[v]
        return names

    def header(self) -> str:
        return f"[{', '.join(self.params)}] ->"


def _failing(loop: For, cond: Expr, around: list[For], names: _Names) -> isl.Set | None:
    """The steps at which `cond` fails for some value of the loops `around`."""
    exprs = [cond, loop.min, loop.extent] + [x for f in around for x in (f.min, f.extent)]
    free = {x for e in exprs for x in walk_expr(e) if isinstance(x, Var)}
    named = names.of(around, free)
    try:
        ranges = [
            f"{aff_text(f.min, named)} <= {named[f.var]} < "
            f"{aff_text(Binary('+', f.min, f.extent, f.min.dtype), named)}"
            for f in around
        ]
        text = cond_text(cond, named)
    except NonAffine:
        return None
    inner = ", ".join(named[f.var] for f in around)
    where = " and ".join([*ranges, f"not ({text})"])
    bad = isl.Set(f"{names.header()} {{ [t] : exists ({inner} : {where}) }}")
    return bad.intersect(_range(loop, names))


def _context(names: _Names, outer: dict[Var, For]) -> isl.Set:
    """What the parameters are known to satisfy: those that are loops around, their ranges."""
    cons = ["0 = 0"]
    for name, var in names.params.items():
        loop = outer.get(var)
        if loop is None:
            continue
        try:
            low, count = (aff_text(e, {}) for e in (loop.min, loop.extent))
        except (NonAffine, KeyError):
            continue  # a bound of other variables: left out of what is known
        cons.append(f"{low} <= {name} < {low} + {count}")
    return isl.Set(f"{names.header()} {{ : {' and '.join(cons)} }}")


def _range(loop: For, names: _Names, last: bool = False) -> isl.Set:
    """The loop's steps (or, with `last`, the step after them)."""
    free = {x for e in (loop.min, loop.extent) for x in walk_expr(e) if isinstance(x, Var)}
    named = names.of([], free)
    low = aff_text(loop.min, named)
    high = aff_text(Binary("+", loop.min, loop.extent, loop.min.dtype), named)
    cons = f"t = {high}" if last else f"{low} <= t < {high}"
    return isl.Set(f"{names.header()} {{ [t] : {cons} }}")


def _decide(body: Stmt, decided: set[int]) -> Stmt:
    """`body` with the guards and selects of the conditions `decided` taken as true."""

    def fold(e: Expr) -> Expr | None:
        if isinstance(e, Select) and id(e.cond) in decided:
            return transform_expr(e.true_value, fold)
        return None

    def go(s: Stmt) -> Stmt:
        if isinstance(s, If) and id(s.cond) in decided:
            return go(s.then)
        return rebuild_stmt(s, lambda e: transform_expr(e, fold), go)

    return go(body)


__all__ = ["split_full_steps"]
