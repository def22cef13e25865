"""A running accumulator rescaled in place and the tensor cores' product accumulated onto it.

An online scan's output state is ``O = O * f + B``, where ``B`` is the step's block of the sum,
``P V``, computed by warpgroup products onto zeros. Lowered as written, each thread holds two
accumulators of the state's size: ``B`` for the products and ``O`` (64 registers each at
d = 128, FlashAttention's output tile). Scaling ``O`` first and running the products onto it
computes the same values in one accumulator, as FlashAttention does:

    B = fill(0); B += wgmma(..)...; for each slot: O = O * f + B
    ->  for each slot: O = O * f;  O += wgmma(..)...

The sum is reassociated only as a warpgroup product already is (the tensor cores add the
products of a block onto the accumulator in their own order; here onto ``O * f`` instead of
zero, then no separate addition). The rewrite applies where nothing else reads or writes
``B``, the products read neither ``O`` nor ``B``, ``f`` does not read ``B``, and both are float32
accumulators of one shape (the same slots hold the same elements).
"""

from __future__ import annotations

from ...ir.expr import Binary, Const, Expr
from ...ir.printer import expr_str
from ..core.nodes import Buffer, For, Load, MatrixOp, Seq, Stmt, Store, Tile, seq
from ..core.visit import stmt_children, stmt_exprs, walk_expr, walk_stmt, with_children

ACCUMULATOR = "wgmma.accumulator"


def accumulate_in_place(body: Stmt) -> Stmt:
    """`body` with every ``fill; products; O = O * f + B`` run rewritten (see the module)."""
    return _rewrite(body, uses_of(body))


def uses_of(body: Stmt) -> dict[int, int]:
    """The statements of `body` that name each buffer, counted by the buffer's id."""
    uses: dict[int, int] = {}
    for s in walk_stmt(body):
        for buffer in buffers_of(s):
            uses[id(buffer)] = uses.get(id(buffer), 0) + 1
    return uses


def _rewrite(s: Stmt, uses: dict[int, int]) -> Stmt:
    kids = tuple(_rewrite(k, uses) for k in stmt_children(s))
    if kids and any(a is not b for a, b in zip(kids, stmt_children(s))):
        s = with_children(s, kids)
    if not isinstance(s, Seq):
        return s
    items = list(s.stmts)
    k = 0
    while k < len(items):
        found = _run_at(items, k, uses)
        if found is None:
            k += 1
            continue
        end, replacement = found
        items[k:end] = replacement
        k += len(replacement)
    return seq(*items) if items != list(s.stmts) else s


def _run_at(items: list[Stmt], k: int, uses: dict[int, int]):
    """``(end, statements)`` where ``items[k:end]`` is a run to rewrite, else None."""
    fills = _leaves(items[k])
    if not fills or not all(
        isinstance(f, MatrixOp) and f.op == "fill" and _is_zero(f.value) for f in fills
    ):
        return None
    block = fills[0].dst.buffer
    if any(f.dst.buffer is not block for f in fills):
        return None
    if block.scope != ACCUMULATOR or block.dtype != "float32":
        return None
    end = k + 1
    while end < len(items) and _only_products_into(items[end], block):
        end += 1
    if end == k + 1 or end == len(items):
        return None
    update = items[end]
    state = _scaled_update(update, block)
    if state is None or state.scope != ACCUMULATOR or state.dtype != "float32":
        return None
    shape = [_const(n) for n in block.shape]
    if None in shape or [_const(n) for n in state.shape] != shape:
        return None
    products = items[k + 1 : end]
    for s in products:
        for op in walk_stmt(s):
            if isinstance(op, MatrixOp) and any(t.buffer in (state, block) for t in op.srcs):
                return None
    counted = sum(1 for s in items[k : end + 1] for t in walk_stmt(s) for b in buffers_of(t)
                  if b is block)  # fmt: skip
    if counted != uses.get(id(block), 0):
        return None  # B is read or written elsewhere too
    scaled = _without_block(update, block)
    moved = [_retarget(s, block, state) for s in products]
    return end + 1, [scaled, *moved]


def _leaves(s: Stmt) -> list[Stmt]:
    """The statements of `s` under its loops (a fill or product stands in the warpgroups'
    loop, the products in their loop over k too)."""
    return [t for t in walk_stmt(s) if not isinstance(t, (Seq, For))]


def _only_products_into(s: Stmt, block: Buffer) -> bool:
    leaves = _leaves(s)
    return bool(leaves) and all(
        isinstance(t, MatrixOp) and t.op == "mma" and t.dst.buffer is block for t in leaves
    )


def _scaled_update(s: Stmt, block: Buffer) -> Buffer | None:
    """The state ``O`` where every store of `s` (loops over slots) is ``O[i] = O[i] * f +
    B[i]`` with f not reading B; else None."""
    state = None
    for t in walk_stmt(s):
        if isinstance(t, (Seq, For)):
            continue
        if not isinstance(t, Store) or len(t.indices) != 1:
            return None
        parts = _split(t.value, t, block)
        if parts is None or (state is not None and t.buffer is not state):
            return None
        state = t.buffer
    return state


def _split(value: Expr, store: Store, block: Buffer) -> Expr | None:
    """``O[i] * f`` of ``O[i] * f + B[i]`` (either order of the sum), or None."""
    if not (isinstance(value, Binary) and value.op == "+"):
        return None
    for scaled, added in ((value.a, value.b), (value.b, value.a)):
        if not _is_slot(added, block, store.indices):
            continue
        if not (isinstance(scaled, Binary) and scaled.op == "*"):
            continue
        for own, factor in ((scaled.a, scaled.b), (scaled.b, scaled.a)):
            if _is_slot(own, store.buffer, store.indices) and not _reads(factor, block):
                return scaled
    return None


def _is_slot(e: Expr, buffer: Buffer, indices: tuple[Expr, ...]) -> bool:
    return (
        isinstance(e, Load)
        and e.buffer is buffer
        and len(e.indices) == 1
        and expr_str(e.indices[0]) == expr_str(indices[0])
    )


def _reads(e: Expr, buffer: Buffer) -> bool:
    return any(isinstance(x, Load) and x.buffer is buffer for x in walk_expr(e))


def _without_block(s: Stmt, block: Buffer) -> Stmt:
    """The update `s` with each ``O[i] * f + B[i]`` made ``O[i] * f``."""
    if isinstance(s, Store):
        return Store(s.buffer, s.indices, _split(s.value, s, block))
    kids = tuple(_without_block(k, block) for k in stmt_children(s))
    return with_children(s, kids)


def _retarget(s: Stmt, block: Buffer, state: Buffer) -> Stmt:
    if isinstance(s, MatrixOp):
        dst = Tile(state, s.dst.base, s.dst.dims, s.dst.shape)
        return MatrixOp(s.op, dst, s.srcs, s.value, s.clipped, s.bulk)
    return with_children(s, tuple(_retarget(k, block, state) for k in stmt_children(s)))


def buffers_of(s: Stmt) -> list[Buffer]:
    """The buffers statement `s` itself names (not its sub-statements')."""
    found = []
    if isinstance(s, Store):
        found.append(s.buffer)
    if isinstance(s, MatrixOp):
        found.extend(t.buffer for t in (s.dst, *s.srcs))
    for e in stmt_exprs(s):
        found.extend(x.buffer for x in walk_expr(e) if isinstance(x, Load))
    return found


def _is_zero(e: Expr | None) -> bool:
    return isinstance(e, Const) and e.value == 0


def _const(e: Expr) -> int | None:
    return e.value if isinstance(e, Const) else None


__all__ = ["ACCUMULATOR", "accumulate_in_place", "buffers_of", "uses_of"]
