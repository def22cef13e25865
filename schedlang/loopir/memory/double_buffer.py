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

from ...ir.expr import Binary, Compare, Const, Expr, const
from ..core.nodes import Allocate, Barrier, Buffer, For, If, Load, Stmt, Store, seq
from ..core.visit import stmt_children, substitute_stmt
from .refill import copies_of, refill_groups, replace_loop, retarget, rewrite_top_down, split_body


def double_buffer(stmt: Stmt, buffers: list[Buffer]) -> Stmt:
    """`stmt` with each of `buffers` doubled and its refill loop pipelined (module doc).

    Expects allocations placed and no barriers yet. Each buffer must be filled in the body of a
    serial loop before it is read there, by statements that read nothing the body's earlier
    statements write (buffers refilled by one loop are pipelined together); otherwise a
    `LoweringError` says why it cannot be.
    """
    remaining = list(buffers)
    while remaining:
        groups = refill_groups(stmt, remaining)
        if not groups:
            break  # filled once (a loop of one value): nothing to do
        loop, group = groups[0]
        stmt = _apply(stmt, loop, group)
        remaining = [b for b in remaining if b not in group]
    return stmt


def _apply(stmt: Stmt, loop: For, group: list[Buffer]) -> Stmt:
    parts = split_body(loop, group, "double_buffer")
    pre, fill, rest = parts.pre, parts.fill, parts.rest
    doubled = {id(b): copies_of(b, 2) for b in group}
    v, lo, hi = loop.var, loop.min, Binary("+", loop.min, loop.extent, "int32")

    def copy(at: Expr) -> Expr:
        return Binary("%", Binary("-", at, lo, "int32"), const(2), "int32")

    def into(part: Stmt, which: Expr) -> Stmt:
        for b in group:
            part = retarget(part, b, doubled[id(b)], which)
        return part

    following = Binary("+", v, const(1), "int32")
    fill_next = substitute_stmt(seq(*fill), {v: following})
    fill_first = substitute_stmt(seq(*fill), {v: lo})
    prologue = If(Compare(">", loop.extent, const(0)), into(fill_first, const(0)))
    more = Compare("<", following, hi)
    staged = _staged(fill_next, group)
    if staged is None:
        pipelined = seq(
            *pre,
            If(more, into(fill_next, copy(following))),
            into(seq(*rest), copy(v)),
            Barrier(),
        )
    else:
        load, store, registers = staged
        pipelined = seq(
            *pre,
            If(more, load),
            into(seq(*rest), copy(v)),
            If(more, into(store, copy(following))),
            Barrier(),
        )
        for register in registers:
            pipelined = Allocate(register, pipelined)
    for wrapper in reversed(parts.wrappers):
        pipelined = Allocate(wrapper.buffer, pipelined)
    new_loop = For(v, loop.min, loop.extent, loop.kind, pipelined, loop.thread)
    return replace_loop(stmt, loop, seq(prologue, Barrier(), new_loop), doubled)


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

    return rewrite_top_down(fill, load), rewrite_top_down(fill, store), registers
