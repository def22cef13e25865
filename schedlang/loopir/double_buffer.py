"""Double buffering: the loop that refills a staged buffer fills the next copy while the current
one is read, as TE's ``double_buffer`` does.

    for ko:                         fill(copy 0, ko = lo)
        fill(ko)                    barrier
        barrier                     for ko:
        compute(ko)        ==>          if ko + 1 < hi: registers = load(ko + 1)
        barrier                         compute(copy (ko - lo) % 2)
                                        if ko + 1 < hi: copy (ko + 1 - lo) % 2 = registers
                                        barrier

One barrier per iteration instead of two, and on a GPU the next tile's loads are in flight while
the current one is used: each thread loads its share of the next tile into registers before
it computes and stores it into the other copy after.
"""

from __future__ import annotations

from ..errors import LoweringError
from ..ir.expr import Binary, Compare, Const, Expr, const
from .nodes import Allocate, Barrier, Buffer, For, If, Load, Seq, Stmt, Store, seq
from .visit import (
    stmt_children,
    stmt_exprs,
    substitute_stmt,
    transform_stmt,
    walk_expr,
    walk_stmt,
    with_children,
)


def double_buffer(stmt: Stmt, buffers: list[Buffer]) -> Stmt:
    """`stmt` with each of `buffers` doubled and its refill loop pipelined (module doc).

    Expects allocations placed and no barriers yet. Each buffer must be filled in the body of a
    serial loop before it is read there, by statements that read nothing the body's earlier
    statements write (buffers refilled by one loop are pipelined together); otherwise a
    `LoweringError` says why it cannot be.
    """
    remaining = list(buffers)
    while remaining:
        groups: dict[int, tuple[For, list[Buffer]]] = {}
        for buffer in remaining:
            loop = _refill_loop(stmt, buffer)
            if loop is not None:  # else one iteration (a loop of one value): nothing to do
                groups.setdefault(id(loop), (loop, []))[1].append(buffer)
        if not groups:
            break
        # The innermost loop first: pipelining an outer loop copies the loops inside it.
        loop, group = max(groups.values(), key=lambda g: _depth(stmt, g[0]))
        stmt = _apply(stmt, loop, group)
        remaining = [b for b in remaining if b not in group]
    return stmt


def _depth(stmt: Stmt, target: Stmt, level: int = 0) -> int:
    if stmt is target:
        return level
    for kid in stmt_children(stmt):
        found = _depth(kid, target, level + 1)
        if found >= 0:
            return found
    return -1


def _apply(stmt: Stmt, loop: For, group: list[Buffer]) -> Stmt:
    wrappers, inner = [], loop.body
    while isinstance(inner, Allocate) and not any(inner.buffer is b for b in group):
        wrappers.append(inner)  # a buffer private to one iteration stays around the body
        inner = inner.body
    body = inner.stmts if isinstance(inner, Seq) else (inner,)

    def touches(s: Stmt) -> bool:
        return any(_writes(s, b) or _reads(s, b) for b in group)

    start = next((k for k, s in enumerate(body) if touches(s)), len(body))
    pre, fill = body[:start], []
    for s in body[start:]:
        if any(_writes(s, b) for b in group) and not any(_reads(s, b) for b in group):
            fill.append(s)
        else:
            break
    rest = body[start + len(fill) :]
    sources = {
        id(x.buffer)
        for s in fill
        for e in _all_exprs(s)
        for x in walk_expr(e)
        if isinstance(x, Load)
    }
    for buffer in group:
        clash = any(
            isinstance(x, Store) and id(x.buffer) in sources for s in pre for x in walk_stmt(s)
        )
        if (
            clash
            or not any(_writes(s, buffer) for s in fill)
            or any(_writes(s, buffer) for s in rest)
        ):
            raise LoweringError(
                f"double_buffer of '{buffer.name}': its loop '{loop.var.name}' does not fill it "
                "first and then only read it; compute the stage at the loop that consumes it"
            )
    doubled = {id(b): _doubled(b) for b in group}
    v, lo, hi = loop.var, loop.min, Binary("+", loop.min, loop.extent, "int32")

    def copy(at: Expr) -> Expr:
        return Binary("%", Binary("-", at, lo, "int32"), const(2), "int32")

    def retarget(part: Stmt, which: Expr) -> Stmt:
        for b in group:
            part = _retarget(part, b, doubled[id(b)], which)
        return part

    following = Binary("+", v, const(1), "int32")
    fill_next = substitute_stmt(seq(*fill), {v: following})
    fill_first = substitute_stmt(seq(*fill), {v: lo})
    prologue = If(Compare(">", loop.extent, const(0)), retarget(fill_first, const(0)))
    more = Compare("<", following, hi)
    staged = _staged(fill_next, group)
    if staged is None:
        pipelined = seq(
            *pre,
            If(more, retarget(fill_next, copy(following))),
            retarget(seq(*rest), copy(v)),
            Barrier(),
        )
    else:
        load, store, registers = staged
        pipelined = seq(
            *pre,
            If(more, load),
            retarget(seq(*rest), copy(v)),
            If(more, retarget(store, copy(following))),
            Barrier(),
        )
        for register in registers:
            pipelined = Allocate(register, pipelined)
    for wrapper in reversed(wrappers):
        pipelined = Allocate(wrapper.buffer, pipelined)
    new_loop = For(v, loop.min, loop.extent, loop.kind, pipelined, loop.thread)
    replaced = seq(prologue, Barrier(), new_loop)

    def swap(s: Stmt) -> Stmt | None:
        if s is loop:
            return replaced
        if isinstance(s, Allocate) and id(s.buffer) in doubled:
            return Allocate(doubled[id(s.buffer)], s.body)
        return None

    return _rewrite(stmt, swap)


def _staged(fill: Stmt, group: list[Buffer]) -> tuple[Stmt, Stmt, list[Buffer]] | None:
    """`fill` split in two through registers: the loads of the next tile, which go before the
    current tile is used, and the stores into its copy, which go after. In between, each
    thread's values wait in a local buffer indexed by the loops around the store other than
    thread loops. Stored straight after its load, a value would stall the thread for the whole
    latency of global memory before it could start on the current tile. None when a loop has
    no constant extent (the fill stays whole)."""
    registers: list[Buffer] = []
    loads_at: dict[int, tuple[Buffer, tuple[Expr, ...]]] = {}

    def visit(s: Stmt, loops: tuple[For, ...]) -> bool:
        if isinstance(s, Store) and any(s.buffer is b for b in group):
            own = [f for f in loops if f.kind != "bound"]
            if not all(isinstance(f.min, Const) and isinstance(f.extent, Const) for f in own):
                return False
            shape = tuple(f.extent for f in own) or (const(1),)
            index = tuple(Binary("-", f.var, f.min, "int32") for f in own) or (const(0),)
            register = Buffer(f"{s.buffer.name}.next", shape, s.buffer.dtype, "local")
            registers.append(register)
            loads_at[id(s)] = (register, index)
            return True
        inner = (*loops, s) if isinstance(s, For) else loops
        return all(visit(k, inner) for k in stmt_children(s))

    if not visit(fill, ()):
        return None

    def load(s: Stmt) -> Stmt | None:
        if isinstance(s, Store) and id(s) in loads_at:
            register, index = loads_at[id(s)]
            return Store(register, index, s.value)
        return None

    def store(s: Stmt) -> Stmt | None:
        if isinstance(s, Store) and id(s) in loads_at:
            register, index = loads_at[id(s)]
            return Store(s.buffer, s.indices, Load(register, index, register.dtype))
        return None

    return _rewrite(fill, load), _rewrite(fill, store), registers


def _doubled(buffer: Buffer) -> Buffer:
    strides = None
    if buffer.strides is not None:
        count = buffer.shape[0] * buffer.strides[0]
        strides = (count,) + buffer.strides
    return Buffer(buffer.name, (const(2),) + buffer.shape, buffer.dtype, buffer.scope, strides)


def _rewrite(stmt: Stmt, fn) -> Stmt:
    """`stmt` rebuilt top-down, `fn` replacing a node before its children are visited."""
    replaced = fn(stmt)
    if replaced is not None and replaced is not stmt:
        return _rewrite(replaced, fn) if isinstance(replaced, Allocate) else replaced
    kids = stmt_children(stmt)
    new = tuple(_rewrite(k, fn) for k in kids)
    return stmt if all(a is b for a, b in zip(new, kids)) else with_children(stmt, new)


def _retarget(stmt: Stmt, old: Buffer, new: Buffer, which: Expr) -> Stmt:
    """Accesses of `old` in `stmt` go to copy `which` of `new`."""

    def load(e: Expr) -> Expr | None:
        if isinstance(e, Load) and e.buffer is old:
            return Load(new, (which,) + e.indices, e.dtype)
        return None

    def store(s: Stmt) -> Stmt | None:
        if isinstance(s, Store) and s.buffer is old:
            return Store(new, (which,) + s.indices, s.value)
        return None

    return transform_stmt(stmt, store, load)


def _refill_loop(stmt: Stmt, buffer: Buffer) -> For | None:
    """The innermost serial loop that holds every access of `buffer`, if any."""
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
        n += sum(
            1
            for e in stmt_exprs(s)
            for x in walk_expr(e)
            if isinstance(x, Load) and x.buffer is buffer
        )
    return n


def _all_exprs(stmt: Stmt):
    for s in walk_stmt(stmt):
        yield from stmt_exprs(s)


def _writes(stmt: Stmt, buffer: Buffer) -> bool:
    return any(isinstance(s, Store) and s.buffer is buffer for s in walk_stmt(stmt))


def _reads(stmt: Stmt, buffer: Buffer) -> bool:
    return any(
        isinstance(x, Load) and x.buffer is buffer
        for s in walk_stmt(stmt)
        for e in stmt_exprs(s)
        for x in walk_expr(e)
    )
