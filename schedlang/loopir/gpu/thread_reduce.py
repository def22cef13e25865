"""Cross-thread reductions: a reduce loop bound to ``threadIdx.*`` becomes a block collective.

Lowering leaves such a reduction as a store that every thread of the reduce dimension executes
at once, ``B[i] = B[i] + v`` (a race). Thread loops are innermost in lowered code, so the store
sits alone under its thread loops and their guards. This pass rewrites that region, as TE's
``tvm_thread_allreduce`` lowering does, into four steps that every thread reaches:

    partial = identity; valid = 0          # every thread of the block
    partial = v; valid = 1                 # the threads that have an instance (guards kept)
    total, any = thread_allreduce(partial, valid) over the reduce tags
    if reduce tags == 0 and any: B[i] = B[i] + total   # one thread per group writes

so threads without work (tails) contribute the identity, and a group with no work writes
nothing. The collective itself is the target's business (warp shuffles on a GPU; the
interpreter combines lanes).

When the region sits in serial loops over the rest of the reduction (loops whose variable the
stored element does not depend on, ``for ko: for kt (threadIdx.x): B[i] += A[i, 256 * ko + kt]``),
each thread first accumulates its values across them and the block combines once after the
outermost, as TE lowers it: a collective per iteration would cost its barriers every time.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ...ir.expr import Compare, Expr, Var, const, logical
from ...ir.reduce import max as max_reducer
from ...ir.visit import substitute
from ..core.nodes import Allocate, Buffer, For, If, Load, Stmt, Store, ThreadAllReduce, seq
from ..core.visit import (
    stmt_children,
    stmt_exprs,
    transform_stmt,
    walk_expr,
    walk_stmt,
    with_children,
)
from ..from_isl import CrossThread


def lower_thread_reductions(body: Stmt, reductions: dict[Store, CrossThread]) -> Stmt:
    """`body` with every store of `reductions` turned into a block collective (module doc).

    Expects the loop nest as `generate` returns it, with `reductions` its cross-thread stores
    (by identity). Guarantees the same result as running the reduction's instances one by one.
    """
    if not reductions:
        return body
    counter = itertools.count()
    hoisted: dict[int, _Parts] = {}  # id(outermost loop accumulated across) -> its reduction
    regions: dict[int, _Parts] = {}  # id(region) -> the same

    def find(s: Stmt, loops: list[For]) -> None:
        if isinstance(s, For) and _is_thread_loop(s):
            found = [x for x in walk_stmt(s) if isinstance(x, Store) and x in reductions]
            if found:
                outer = _outermost_reduce_loop(loops, found[0])
                if outer is not None and id(outer) not in hoisted:
                    parts = _parts(s, found[0], reductions[found[0]], next(counter))
                    hoisted[id(outer)] = regions[id(s)] = parts
            return
        inner = [*loops, s] if isinstance(s, For) else loops
        for kid in stmt_children(s):
            find(kid, inner)

    find(body, [])

    def visit(s: Stmt) -> Stmt:
        if isinstance(s, For) and _is_thread_loop(s):
            found = [x for x in walk_stmt(s) if isinstance(x, Store) and x in reductions]
            if not found:
                return s
            if id(s) in regions:
                return regions[id(s)].accumulate
            p = _parts(s, found[0], reductions[found[0]], next(counter))
            return p.allocated(seq(p.reset, p.contribute, p.collective, p.write))
        kids = stmt_children(s)
        new = tuple(visit(k) for k in kids)
        rebuilt = s if all(a is b for a, b in zip(new, kids)) else with_children(s, new)
        if id(s) in hoisted:
            p = hoisted[id(s)]
            return p.allocated(seq(p.reset, rebuilt, p.collective, p.write))
        return rebuilt

    return visit(body)


def _outermost_reduce_loop(loops: list[For], store: Store) -> For | None:
    """The outermost of the serial loops directly around a region (innermost last in `loops`)
    over which the stored element stays the same and which touch the stored buffer nowhere
    else: the loops a thread can accumulate across before the collective."""
    indexed = {id(v) for i in store.indices for v in walk_expr(i) if isinstance(v, Var)}
    outer = None
    for loop in reversed(loops):
        if loop.kind not in ("serial", "unrolled") or id(loop.var) in indexed:
            break
        others = [x for x in walk_stmt(loop) if x is not store and _touches(x, store.buffer)]
        if others:
            break
        outer = loop
    return outer


def _is_thread_loop(s: For) -> bool:
    return s.kind == "bound" and (s.thread or "").startswith("threadIdx")


@dataclass(frozen=True)
class _Parts:
    """The pieces of one cross-thread reduction (module docstring), each shaped like its
    region (the thread loops around the store)."""

    buffers: tuple[Buffer, ...]  # partial, total, valid, any
    reset: Stmt
    contribute: Stmt
    accumulate: Stmt
    collective: Stmt
    write: Stmt

    def allocated(self, body: Stmt) -> Stmt:
        for buffer in reversed(self.buffers):
            body = Allocate(buffer, body)
        return body


def _parts(region: For, store: Store, info: CrossThread, n: int) -> _Parts:
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

    def combine(a: Expr, b: Expr) -> Expr:
        return substitute(comb.result, {comb.lhs: a, comb.rhs: b})

    mark = Store(valid, zero, const(1))
    collective = ThreadAllReduce(
        (comb, max_reducer.combiner("int32")), (partial, valid), (total, found), info.tags
    )
    leaders = [Compare("==", v, const(0)) for v in _thread_vars(region, info.tags)]
    old = Load(store.buffer, store.indices, dtype)
    combined = combine(old, Load(total, zero, dtype))
    condition = logical("and", (*leaders, Compare("!=", Load(found, zero, "int32"), const(0))))
    return _Parts(
        buffers=(partial, total, valid, found),
        # every thread of the block, not only the region's: the collective combines all the
        # threads of its tags, and a block may be wider than the reduce loop (another stage
        # binds more threads); local stores outside thread loops run on every thread
        reset=seq(Store(partial, zero, comb.identity), Store(valid, zero, const(0))),
        contribute=at_store(seq(Store(partial, zero, info.value), mark), True),
        accumulate=at_store(
            seq(Store(partial, zero, combine(Load(partial, zero, dtype), info.value)), mark), True
        ),
        collective=collective,
        write=at_store(If(condition, Store(store.buffer, store.indices, combined)), False),
    )


def _touches(s: Stmt, buffer: Buffer) -> bool:
    if isinstance(s, Store) and s.buffer is buffer:
        return True
    return any(
        isinstance(x, Load) and x.buffer is buffer for e in stmt_exprs(s) for x in walk_expr(e)
    )


def _thread_vars(region: Stmt, tags: tuple[str, ...]) -> list[Expr]:
    """The variable of the region's loop bound to each of `tags`."""
    found: dict[str, Expr] = {}
    for s in walk_stmt(region):
        if isinstance(s, For) and s.thread in tags:
            found.setdefault(s.thread, s.var)
    return [found[tag] for tag in tags]
