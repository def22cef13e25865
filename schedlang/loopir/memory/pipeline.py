"""Software pipelines of asynchronous copies: a staged buffer filled `stages - 1` iterations of its
refill loop ahead of its use, with ``cp.async`` (Triton's ``num_stages``, a generalisation of
TE's ``double_buffer``).

    for ko:                       for p in [0, stages - 1): async fill(copy p, ko = lo + p); commit
        fill(ko)                  for ko:
        barrier          ==>          wait until the group of ko has landed (async_wait)
        compute(ko)                   barrier
        barrier                       async fill(copy (ko + stages - 1) % stages, ko + stages - 1)
                                      commit
                                      compute(copy ko % stages)

A thread issues its copies and goes on; they land in the background, while the threads compute
on the copies filled before. One barrier per iteration: after it, every thread's copies for
this iteration are visible (each waited for its own before the barrier), and every thread is
done with the copy that the fill issued next overwrites (it was read in the iteration before).
A group is committed in every iteration, empty past the end, so that "all but the newest
``stages - 2``" is always the group of the current iteration.

A fill must be a plain copy from global memory whose innermost loop moves 4, 8 or 16 bytes of
consecutive elements (a vectorized loop of 1-4 floats or 2-8 halves, or single floats), or
such a copy padded with zeros (``if_then_else(cond, A[...], 0)``, the condition the same for
the lanes of a vector: the copy then writes zeros where it is false, reading nothing):
anything else is a `LoweringError` that says what to change.
"""

from __future__ import annotations

from dataclasses import replace

from ...errors import LoweringError
from ...ir import dtype as dt
from ...ir.expr import Binary, Compare, Const, Expr, Select, Var, const
from ..core.nodes import (
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    Buffer,
    For,
    If,
    Load,
    Stmt,
    Store,
    seq,
)
from ..core.simplify import simplify_expr
from ..core.visit import substitute_expr, substitute_stmt
from ..index.strides import depends_on, lane_stride
from .refill import copies_of, refill_groups, replace_loop, retarget, rewrite_top_down, split_body

_BYTES = (4, 8, 16)


def pipeline(stmt: Stmt, buffers: dict[Buffer, int]) -> Stmt:
    """`stmt` with each buffer of `buffers` (its number of stages, >= 2) filled by a pipeline of
    asynchronous copies (module doc). Expects allocations placed and no barriers yet; buffers
    refilled by one loop are pipelined together, with the most stages asked of them."""
    remaining = list(buffers)
    while remaining:
        groups = refill_groups(stmt, remaining)
        if not groups:
            break  # filled once: a plain fill, nothing to overlap
        loop, group = groups[0]
        stmt = _apply(stmt, loop, group, max(buffers[b] for b in group))
        remaining = [b for b in remaining if b not in group]
    return stmt


def _apply(stmt: Stmt, loop: For, group: list[Buffer], stages: int) -> Stmt:
    parts = split_body(loop, group, f"pipeline(stages={stages})")
    fill = _asynchronous(seq(*parts.fill), group, stages)
    copies = {id(b): copies_of(b, stages) for b in group}
    v, lo = loop.var, loop.min
    hi = Binary("+", lo, loop.extent, v.dtype)

    def into(part: Stmt, which: Expr) -> Stmt:
        for b in group:
            part = retarget(part, b, copies[id(b)], which)
        return part

    def slot(at: Expr) -> Expr:
        return Binary("%", Binary("-", at, lo, v.dtype), const(stages, v.dtype), v.dtype)

    prologue = []
    for p in range(stages - 1):
        at = Binary("+", lo, const(p, v.dtype), v.dtype)
        issued = into(substitute_stmt(fill, {v: at}), const(p, v.dtype))
        prologue += [If(Compare("<", at, hi), issued), AsyncCommit()]
    ahead = Binary("+", v, const(stages - 1, v.dtype), v.dtype)
    body = seq(
        *parts.pre,
        AsyncWait(stages - 2),
        Barrier(),
        If(Compare("<", ahead, hi), into(substitute_stmt(fill, {v: ahead}), slot(ahead))),
        AsyncCommit(),
        into(seq(*parts.rest), slot(v)),
    )
    for wrapper in reversed(parts.wrappers):
        body = Allocate(wrapper.buffer, body)
    new_loop = For(v, lo, loop.extent, loop.kind, body, loop.thread)
    # the last groups, empty, leave nothing in flight once the loop is done
    return replace_loop(stmt, loop, seq(*prologue, new_loop, AsyncWait(0)), copies)


def _asynchronous(fill: Stmt, group: list[Buffer], stages: int) -> Stmt:
    """The stores of `fill` into the buffers of `group` as `AsyncCopy`s: a vectorized loop of
    one store becomes one copy of its lanes, a store of one element a copy of one."""
    targets = {id(b) for b in group}

    def copy(s: Stmt) -> Stmt | None:
        if isinstance(s, For) and s.kind == "vectorized":
            # the thread loops and guards between the vector loop and its store (lowering
            # puts thread loops innermost) stay around the copy of the whole vector
            around, store = [], s.body
            while _between(store, s.var):
                around.append(store)
                store = store.body if isinstance(store, For) else store.then
            if isinstance(store, Store) and id(store.buffer) in targets:
                issued: Stmt = _vector_copy(s, store, stages)
                for outer in reversed(around):
                    issued = (
                        replace(outer, body=issued)
                        if isinstance(outer, For)
                        else If(outer.cond, issued)
                    )
                return issued
        if isinstance(s, Store) and id(s.buffer) in targets:
            source, when = _source(s, stages)
            return _copy(s, s.indices, source, 1, stages, when)
        return None

    return rewrite_top_down(fill, copy)  # a vectorized loop before the store inside it


def _vector_copy(loop: For, store: Store, stages: int) -> Stmt:
    if not isinstance(loop.extent, Const):
        raise _error(store, stages, "its vectorized loop has no constant extent")
    lanes = int(loop.extent.value)
    source, when = _source(store, stages)
    if when is not None and depends_on(when, loop.var):
        raise _error(
            store,
            stages,
            f"its padding condition differs between the lanes of its vectorized loop "
            f"'{loop.var.name}'; pad whole vectors (a condition on the rows, not the lanes)",
        )
    for buffer in (store.buffer, source.buffer):
        last = None if buffer.strides is None else buffer.strides[-1]
        if last is not None and not (isinstance(last, Const) and int(last.value) == 1):
            raise _error(
                store,
                stages,
                f"the elements of the last dimension of '{buffer.name}' are not adjacent in "
                "memory (storage_align of its last axis), so a vector of them is not one copy; "
                "align another axis, or do not vectorize the copy",
            )
    for indices, who in ((store.indices, store.buffer.name), (source.indices, source.buffer.name)):
        steps = [lane_stride(i, loop.var, lanes) for i in indices]
        if steps[-1] != 1 or any(s != 0 for s in steps[:-1]):
            raise _error(
                store,
                stages,
                f"the lanes of its vectorized loop '{loop.var.name}' are not consecutive "
                f"elements of the last dimension of '{who}' (a vector straddles two rows: the "
                "rows of the tile are not a multiple of the vector); make the tile's rows a "
                "multiple of the vector's width, or double_buffer() the stage instead",
            )
    first = {loop.var: loop.min}
    dst = tuple(simplify_expr(substitute_expr(i, first)) for i in store.indices)
    start = tuple(simplify_expr(substitute_expr(i, first)) for i in source.indices)
    src = Load(source.buffer, start, source.dtype)
    return _copy(store, dst, src, lanes, stages, when)


def _copy(
    store: Store, dst: tuple, source: Load, lanes: int, stages: int, when: Expr | None = None
) -> AsyncCopy:
    size = lanes * dt.bits(store.buffer.dtype) // 8
    if size not in _BYTES:
        raise _error(
            store,
            stages,
            f"each copy moves {size} bytes ({lanes} x {store.buffer.dtype}), and an asynchronous "
            "copy moves 4, 8 or 16: vectorize the copy's innermost loop so that it moves 16 "
            "bytes (8 halves, 4 floats) at a time, over rows whose length is a multiple of the "
            "vector (a row's tail guarded lane by lane is copied element by element); or "
            "double_buffer() the stage instead",
        )
    return AsyncCopy(store.buffer, dst, source.buffer, source.indices, lanes, when)


def _source(store: Store, stages: int) -> tuple[Load, Expr | None]:
    """The element of global memory `store` copies, and the condition where it copies one
    rather than a zero (padding), or None."""
    value, when = store.value, None
    if (
        isinstance(value, Select)
        and isinstance(value.false_value, Const)
        and float(value.false_value.value) == 0.0
    ):
        value, when = value.true_value, value.cond
    if not isinstance(value, Load) or value.buffer.scope != "global":
        raise _error(
            store,
            stages,
            "its value is not an element of a tensor in global memory (an asynchronous copy "
            "moves bytes as they are: no arithmetic, cast or padding); pipeline a plain copy",
        )
    if value.dtype != store.buffer.dtype:
        raise _error(store, stages, "it converts its values, which an asynchronous copy cannot")
    return value, when


def _between(s: Stmt, var: Var) -> bool:
    """A thread loop, or a guard of the whole vector, between a vector loop and its store."""
    if isinstance(s, For):
        return s.kind == "bound" and not depends_on(s.min, var) and not depends_on(s.extent, var)
    return isinstance(s, If) and s.otherwise is None and not depends_on(s.cond, var)


def _error(store: Store, stages: int, why: str) -> LoweringError:
    return LoweringError(
        f"pipeline(stages={stages}) of '{store.buffer.name}' fills it with asynchronous copies, "
        f"but {why}"
    )
