"""Cross-thread reductions: a reduce loop bound to ``threadIdx.*`` becomes a block collective.

Lowering leaves such a reduction as a store that every thread of the reduce dimension executes
at once, ``B[i] = B[i] + v`` (a race). Thread loops are innermost in lowered code, so the store
sits alone under its thread loops and their guards. This pass rewrites that region, as TE's
``tvm_thread_allreduce`` lowering does, into four steps that every thread reaches:

    partial = identity; valid = 0          # every thread (the guards dropped)
    partial = v; valid = 1                 # the threads that have an instance (guards kept)
    total, any = thread_allreduce(partial, valid) over the reduce tags
    if reduce tags == 0 and any: B[i] = B[i] + total   # one thread per group writes

so threads without work (tails) contribute the identity, and a group with no work writes
nothing. The collective itself is the target's business (warp shuffles on a GPU; the
interpreter combines lanes).
"""

from __future__ import annotations

import itertools

from ..ir.expr import Compare, Expr, const, logical
from ..ir.reduce import max as max_reducer
from ..ir.visit import substitute
from .from_isl import CrossThread
from .nodes import Allocate, Buffer, For, If, Load, Stmt, Store, ThreadAllReduce, seq
from .visit import stmt_children, transform_stmt, walk_stmt, with_children


def lower_thread_reductions(body: Stmt, reductions: dict[Store, CrossThread]) -> Stmt:
    """`body` with every store of `reductions` turned into a block collective (module doc).

    Expects the loop nest as `generate` returns it, with `reductions` its cross-thread stores
    (by identity). Guarantees the same result as running the reduction's instances one by one.
    """
    if not reductions:
        return body
    counter = itertools.count()

    def visit(s: Stmt) -> Stmt:
        if isinstance(s, For) and _is_thread_loop(s):
            found = [x for x in walk_stmt(s) if isinstance(x, Store) and x in reductions]
            return _collective(s, found[0], reductions[found[0]], next(counter)) if found else s
        kids = stmt_children(s)
        new = tuple(visit(k) for k in kids)
        return s if all(a is b for a, b in zip(new, kids)) else with_children(s, new)

    return visit(body)


def _is_thread_loop(s: For) -> bool:
    return s.kind == "bound" and (s.thread or "").startswith("threadIdx")


def _collective(region: For, store: Store, info: CrossThread, n: int) -> Stmt:
    comb = info.combiner
    dtype = store.buffer.dtype
    partial = Buffer(f"red{n}.partial", (const(1),), dtype, "local")
    total = Buffer(f"red{n}.total", (const(1),), dtype, "local")
    valid = Buffer(f"red{n}.valid", (const(1),), "int32", "local")
    found = Buffer(f"red{n}.any", (const(1),), "int32", "local")
    zero = (const(0),)

    def at_store(replacement: Stmt, keep_guards: bool) -> Stmt:
        def fn(s: Stmt) -> Stmt | None:
            if s is store:
                return replacement
            if isinstance(s, If) and not keep_guards:
                return s.then
            return None

        return transform_stmt(region, fn)

    reset = at_store(
        seq(Store(partial, zero, comb.identity), Store(valid, zero, const(0))), keep_guards=False
    )
    contribute = at_store(
        seq(Store(partial, zero, info.value), Store(valid, zero, const(1))), keep_guards=True
    )
    collective = ThreadAllReduce(
        (comb, max_reducer.combiner("int32")), (partial, valid), (total, found), info.tags
    )
    leaders = [Compare("==", v, const(0)) for v in _thread_vars(region, info.tags)]
    old = Load(store.buffer, store.indices, dtype)
    combined = substitute(comb.result, {comb.lhs: old, comb.rhs: Load(total, zero, dtype)})
    condition = logical("and", (*leaders, Compare("!=", Load(found, zero, "int32"), const(0))))
    write = at_store(If(condition, Store(store.buffer, store.indices, combined)), False)
    nest: Stmt = seq(reset, contribute, collective, write)
    for buffer in (found, valid, total, partial):
        nest = Allocate(buffer, nest)
    return nest


def _thread_vars(region: Stmt, tags: tuple[str, ...]) -> list[Expr]:
    """The variable of the region's loop bound to each of `tags`."""
    found: dict[str, Expr] = {}
    for s in walk_stmt(region):
        if isinstance(s, For) and s.thread in tags:
            found.setdefault(s.thread, s.var)
    return [found[tag] for tag in tags]
