"""An epilogue computed in its accumulator's own registers.

A GEMM whose output scales the sum, ``C = ((A @ B^T) * sa * sb).astype(bf16)`` (a quantised
GEMM's scales), is scheduled with the scaled copy in a fragment of its own,
``cache_write(C, "wgmma.accumulator")``, which ``store_matrix`` stores. Lowered as written, each
thread holds both fragments: at a 64 x 256 tile the float32 accumulator's 128 registers and the
copy's 64, past the 168 registers a thread of a block of three warpgroups gets. Where each
element of the copy is computed from the accumulator's same slot only, and nothing uses the
accumulator afterwards, the values can be computed into the accumulator itself, and the store
converts them on the way out (as it does for any float32 accumulator):

    H[s] = bfloat16(f(acc[s]));  C = store_matrix(H)
    ->  acc[s] = f(acc[s]);      C = store_matrix(acc)

The same roundings: ``f`` in float32, then one conversion to C's dtype. The rewrite applies where
the copy ``H`` is written by that one statement only and read by stores only, both fragments
have one shape (the same slots hold the same elements), and the accumulator is first filled, in
the run of statements that ends with the epilogue, before anything reads it.
"""

from __future__ import annotations

from ...ir.expr import Cast, Expr
from ...ir.printer import expr_str
from ..core.nodes import Buffer, For, If, Load, MatrixOp, Seq, Stmt, Store, Tile, seq
from ..core.visit import stmt_children, transform_stmt, walk_expr, walk_stmt, with_children
from .accumulate_in_place import ACCUMULATOR, buffers_of, uses_of


def epilogue_in_place(body: Stmt) -> Stmt:
    """`body` with each epilogue fragment that can be computed in its accumulator so computed
    (see the module)."""
    uses = uses_of(body)
    return transform_stmt(body, lambda s: _in_place(s, uses) if isinstance(s, Seq) else None)


def _in_place(s: Seq, uses: dict[int, int]) -> Stmt | None:
    """`s` with its runs rewritten, or None where it has none."""
    items = list(s.stmts)
    for k in range(len(items)):
        found = _epilogue(items, k, uses)
        if found is not None:
            copy, acc = found
            items = [*items[:k], *(_retarget(t, copy, acc) for t in items[k:])]
    return seq(*items) if items != list(s.stmts) else None


def _epilogue(items: list[Stmt], k: int, uses: dict[int, int]) -> tuple[Buffer, Buffer] | None:
    """``(H, acc)`` where ``items[k]`` computes fragment H from float32 accumulator acc slot by
    slot and the rest of `items` only stores H (see the module's conditions), else None."""
    leaves = _leaves(items[k])
    if not leaves or not all(isinstance(t, Store) and len(t.indices) == 1 for t in leaves):
        return None
    copy = leaves[0].buffer
    if copy.scope != ACCUMULATOR or any(t.buffer is not copy for t in leaves):
        return None
    accs = {id(x.buffer): x.buffer for t in leaves for x in walk_expr(t.value) if _fragment(x)}
    if len(accs) != 1:
        return None
    (acc,) = accs.values()
    if acc is copy or acc.dtype != "float32" or _shape(acc) != _shape(copy) or None in _shape(acc):
        return None
    if not all(_slotwise(t, acc) and _value(t, acc) is not None for t in leaves):
        return None
    rest = [t for item in items[k + 1 :] for t in _leaves(item) if _names(t, copy)]
    if not rest or not all(_stores_from(t, copy) for t in rest):
        return None
    if _count(leaves + rest, copy) != uses.get(id(copy), 0):
        return None  # H is used elsewhere too
    before = [t for item in items[:k] for t in _leaves(item) if _names(t, acc)]
    if not before or not _is_fill(before[0], acc):
        return None  # acc may carry values from an enclosing loop's last iteration
    if _count(before + leaves, acc) != uses.get(id(acc), 0):
        return None  # acc is used after the epilogue, or outside this run
    return copy, acc


def _fragment(e: Expr) -> bool:
    return isinstance(e, Load) and e.buffer.scope == ACCUMULATOR and len(e.indices) == 1


def _slotwise(t: Store, acc: Buffer) -> bool:
    """Whether `t` reads `acc` only at the slot it stores."""
    slot = expr_str(t.indices[0])
    return all(
        expr_str(x.indices[0]) == slot
        for x in walk_expr(t.value)
        if isinstance(x, Load) and x.buffer is acc
    )


def _value(t: Store, acc: Buffer) -> Expr | None:
    """The float32 value `t` stores, before its conversion to the copy's dtype."""
    value = t.value
    if t.buffer.dtype == acc.dtype:
        return value
    if isinstance(value, Cast) and value.dtype == t.buffer.dtype and value.value.dtype == acc.dtype:
        return value.value
    return None


def _retarget(s: Stmt, copy: Buffer, acc: Buffer) -> Stmt:
    """`s` with the epilogue's stores made into `acc` and the stores of `copy` made from it."""
    if isinstance(s, Store) and s.buffer is copy:
        return Store(acc, s.indices, _value(s, acc))
    if isinstance(s, MatrixOp) and s.op == "store" and s.srcs[0].buffer is copy:
        src = s.srcs[0]
        tile = Tile(acc, src.base, src.dims, src.shape)
        return MatrixOp(s.op, s.dst, (tile,), s.value, s.clipped, s.bulk)
    kids = tuple(_retarget(k, copy, acc) for k in stmt_children(s))
    if kids and any(a is not b for a, b in zip(kids, stmt_children(s))):
        return with_children(s, kids)
    return s


def _leaves(s: Stmt) -> list[Stmt]:
    """The statements under `s`'s loops and guards (the elements a tile's edge cuts off keep
    their guards, `fragment_lanes`)."""
    return [t for t in walk_stmt(s) if not isinstance(t, (Seq, For, If))]


def _names(s: Stmt, buffer: Buffer) -> bool:
    return any(b is buffer for b in buffers_of(s))


def _count(statements: list[Stmt], buffer: Buffer) -> int:
    """How many times `statements` name `buffer`, as `uses_of` counts."""
    return sum(1 for t in statements for b in buffers_of(t) if b is buffer)


def _stores_from(t: Stmt, copy: Buffer) -> bool:
    return (
        isinstance(t, MatrixOp)
        and t.op == "store"
        and t.srcs[0].buffer is copy
        and t.dst.buffer is not copy
    )


def _is_fill(t: Stmt, acc: Buffer) -> bool:
    return isinstance(t, MatrixOp) and t.op == "fill" and t.dst.buffer is acc


def _shape(b: Buffer) -> tuple[int | None, ...]:
    return tuple(getattr(n, "value", None) for n in b.shape)


__all__ = ["epilogue_in_place"]
