"""The loop that refills staged buffers, its body in three parts, and buffers with several copies.

A stage computed at a loop of its consumer (a shared tile refilled per k step) is filled at the
start of each iteration of that loop and read after. `double_buffer` and `pipeline` both
rewrite that loop so that the next iterations' fills overlap the current one's reads, each
into another copy of the buffer: `refill_groups` finds the loops (innermost first),
`split_body` the parts of their bodies, `copies_of` and `retarget` the buffers with a copy
index in front.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...errors import LoweringError
from ...ir.expr import Const, Expr, const
from ..core.nodes import (
    Allocate,
    AsyncCopy,
    Buffer,
    BulkCopy,
    For,
    If,
    Load,
    MatrixOp,
    Seq,
    Stmt,
    Store,
    Tile,
    seq,
)
from ..core.visit import (
    stmt_children,
    stmt_exprs,
    transform_stmt,
    walk_expr,
    walk_stmt,
    with_children,
)


@dataclass(frozen=True)
class Body:
    """A refill loop's body: `wrappers` (allocations private to one iteration, kept around
    it), then `pre` (statements that touch none of the buffers), `fill` and `rest`."""

    wrappers: tuple[Allocate, ...]
    pre: tuple[Stmt, ...]
    fill: tuple[Stmt, ...]
    rest: tuple[Stmt, ...]


def refill_groups(stmt: Stmt, buffers: list[Buffer]) -> list[tuple[For, list[Buffer]]]:
    """The refill loop of each buffer (the innermost serial loop holding all its accesses),
    buffers refilled by one loop grouped, innermost loop first (rewriting an outer loop
    copies the loops inside it). A buffer with no such loop (filled once) is left out."""
    groups: dict[int, tuple[For, list[Buffer]]] = {}
    for buffer in buffers:
        loop = _refill_loop(stmt, buffer)
        if loop is not None:
            groups.setdefault(id(loop), (loop, []))[1].append(buffer)
    return sorted(groups.values(), key=lambda g: -_depth(stmt, g[0]))


def split_body(loop: For, group: list[Buffer], call: str) -> Body:
    """`loop`'s body in parts, or a `LoweringError` naming `call` (the primitive) when the
    loop does not fill the buffers first and then only read them."""
    wrappers, inner = [], loop.body
    while isinstance(inner, Allocate) and not any(inner.buffer is b for b in group):
        wrappers.append(inner)
        inner = inner.body
    body = inner.stmts if isinstance(inner, Seq) else (inner,)

    def touches(s: Stmt) -> bool:
        return any(writes(s, b) or reads(s, b) for b in group)

    body = _fills_first(_guarded_fills(body, group), group)
    start = next((k for k, s in enumerate(body) if touches(s)), len(body))
    pre, fill = body[:start], []
    for s in body[start:]:
        if any(writes(s, b) for b in group) and not any(reads(s, b) for b in group):
            fill.append(s)
        else:
            break
    rest = body[start + len(fill) :]
    sources = {id(x.buffer) for s in fill for x in _loads(s)}
    for buffer in group:
        clash = any(
            isinstance(x, Store) and id(x.buffer) in sources for s in pre for x in walk_stmt(s)
        )
        if (
            clash
            or not any(writes(s, buffer) for s in fill)
            or any(writes(s, buffer) for s in rest)
        ):
            raise LoweringError(
                f"{call} of '{buffer.name}': its loop '{loop.var.name}' does not fill it "
                "first and then only read it; compute the stage at the loop that consumes it"
            )
    return Body(tuple(wrappers), tuple(pre), tuple(fill), tuple(rest))


def _fills_first(body: tuple[Stmt, ...], group: list[Buffer]) -> tuple[Stmt, ...]:
    """`body` with each fill of a buffer of `group` that comes after other statements moved up
    to the first fill, where nothing in between touches its buffer or writes what it reads
    (the statements are independent: a scan's step fills its keys first and its values after
    the scores, and both can be in flight together)."""
    order = list(body)
    first = next((k for k, s in enumerate(order) if _fills(s, group)), None)
    if first is None:
        return body
    k = first + 1
    while k < len(order):
        s = order[k]
        end = first + 1
        while end < len(order) and _fills(order[end], group):
            end += 1
        if k >= end and _fills(s, group) and _independent(s, order[end:k], group):
            order.insert(end, order.pop(k))
        k += 1
    return tuple(order)


def _guarded_fills(body: tuple[Stmt, ...], group: list[Buffer]) -> tuple[Stmt, ...]:
    """`body` with each guard whose statements start with fills split in two, the fills under
    a guard of their own: ``if c: fill; rest`` is ``if c: fill`` then ``if c: rest`` where `c`
    reads no memory (a block of keys above a causal diagonal, skipped with its copies)."""
    out: list[Stmt] = []
    for s in body:
        if not (isinstance(s, If) and s.otherwise is None and isinstance(s.then, Seq)):
            out.append(s)
            continue
        if any(isinstance(x, Load) for x in walk_expr(s.cond)):
            out.append(s)
            continue
        stmts = s.then.stmts
        count = 0
        while count < len(stmts) and _fills(stmts[count], group):
            count += 1
        if count == 0 or count == len(stmts):
            out.append(s)
            continue
        out.append(If(s.cond, seq(*stmts[:count])))
        out.append(If(s.cond, seq(*stmts[count:])))
    return tuple(out)


def _fills(s: Stmt, group: list[Buffer]) -> bool:
    return any(writes(s, b) for b in group) and not any(reads(s, b) for b in group)


def _independent(fill: Stmt, between: list[Stmt], group: list[Buffer]) -> bool:
    filled = [b for b in group if writes(fill, b)]
    sources = {id(x.buffer) for x in _loads(fill)}
    for s in between:
        if any(writes(s, b) or reads(s, b) for b in filled):
            return False
        if any(isinstance(x, Store) and id(x.buffer) in sources for x in walk_stmt(s)):
            return False
    return True


def copies_of(buffer: Buffer, count: int) -> Buffer:
    """`buffer` with `count` copies: a copy index in front."""
    strides = None
    if buffer.strides is not None:
        first = buffer.strides[0]
        extent = buffer.shape[0]
        if isinstance(first, Const) and isinstance(extent, Const):
            strides = (const(first.value * extent.value, first.dtype),) + buffer.strides
        else:
            strides = (extent * first,) + buffer.strides
    shape = (const(count),) + buffer.shape
    return Buffer(buffer.name, shape, buffer.dtype, buffer.scope, strides, buffer.swizzle)


def retarget(stmt: Stmt, old: Buffer, new: Buffer, which: Expr) -> Stmt:
    """Accesses of `old` in `stmt` go to copy `which` of `new` (`copies_of`)."""

    def load(e: Expr) -> Expr | None:
        if isinstance(e, Load) and e.buffer is old:
            return Load(new, (which,) + e.indices, e.dtype)
        return None

    def tile(t: Tile) -> Tile:
        if t.buffer is not old:
            return t
        return Tile(new, (which,) + t.base, (t.dims[0] + 1, t.dims[1] + 1), t.shape)

    def store(s: Stmt) -> Stmt | None:
        if isinstance(s, Store) and s.buffer is old:
            return Store(new, (which,) + s.indices, s.value)
        if isinstance(s, MatrixOp) and any(t.buffer is old for t in (s.dst, *s.srcs)):
            srcs = tuple(tile(t) for t in s.srcs)
            return MatrixOp(s.op, tile(s.dst), srcs, s.value, s.clipped, s.bulk)
        if isinstance(s, AsyncCopy) and s.dst is old:
            return AsyncCopy(new, (which,) + s.dst_index, s.src, s.src_index, s.lanes, s.when)
        return None

    return transform_stmt(stmt, store, load)


def replace_loop(stmt: Stmt, loop: For, new: Stmt, buffers: dict[int, Buffer]) -> Stmt:
    """`stmt` with `loop` replaced by `new` and the allocations of `buffers` (by the id of
    the buffer they replace) swapped in."""

    def swap(s: Stmt) -> Stmt | None:
        if s is loop:
            return new
        if isinstance(s, Allocate) and id(s.buffer) in buffers:
            return Allocate(buffers[id(s.buffer)], s.body)
        return None

    return rewrite_top_down(stmt, swap)


def rewrite_top_down(stmt: Stmt, fn) -> Stmt:
    """`stmt` rebuilt top-down, `fn` replacing a node before its children are visited."""
    replaced = fn(stmt)
    if replaced is not None and replaced is not stmt:
        return rewrite_top_down(replaced, fn) if isinstance(replaced, Allocate) else replaced
    kids = stmt_children(stmt)
    new = tuple(rewrite_top_down(k, fn) for k in kids)
    return stmt if all(a is b for a, b in zip(new, kids)) else with_children(stmt, new)


def writes(stmt: Stmt, buffer: Buffer) -> bool:
    return any(
        (isinstance(s, Store) and s.buffer is buffer)
        or (isinstance(s, MatrixOp) and s.dst.buffer is buffer)
        or (isinstance(s, (AsyncCopy, BulkCopy)) and s.dst is buffer)
        for s in walk_stmt(stmt)
    )


def reads(stmt: Stmt, buffer: Buffer) -> bool:
    tiles = (t for s in walk_stmt(stmt) if isinstance(s, MatrixOp) for t in s.srcs)
    if any(t.buffer is buffer for t in tiles):
        return True
    return any(x.buffer is buffer for x in _loads(stmt))


def _loads(stmt: Stmt) -> Iterator[Load]:
    for s in walk_stmt(stmt):
        for e in stmt_exprs(s):
            for x in walk_expr(e):
                if isinstance(x, Load):
                    yield x


def _refill_loop(stmt: Stmt, buffer: Buffer) -> For | None:
    best = None
    for s in walk_stmt(stmt):
        if isinstance(s, For) and s.kind == "serial" and _covers(s, stmt, buffer):
            best = s
    return best


def _covers(loop: For, whole: Stmt, buffer: Buffer) -> bool:
    return _count(loop, buffer) == _count(whole, buffer) > 0


def _count(stmt: Stmt, buffer: Buffer) -> int:
    n = 0
    for s in walk_stmt(stmt):
        if isinstance(s, Store) and s.buffer is buffer:
            n += 1
        if isinstance(s, MatrixOp):
            n += sum(1 for t in (s.dst, *s.srcs) if t.buffer is buffer)
        n += sum(
            1
            for e in stmt_exprs(s)
            for x in walk_expr(e)
            if isinstance(x, Load) and x.buffer is buffer
        )
    return n


def _depth(stmt: Stmt, target: Stmt, level: int = 0) -> int:
    if stmt is target:
        return level
    for kid in stmt_children(stmt):
        found = _depth(kid, target, level + 1)
        if found >= 0:
            return found
    return -1
