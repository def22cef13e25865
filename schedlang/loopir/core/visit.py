"""Generic traversal and rewriting of loop-IR statements and of the expressions inside them.

`schedlang.ir.visit` knows the algorithm's expression nodes but not `Load`, whose indices are
expressions too; the functions here cover both, so a pass can rewrite every expression of a loop
nest (indices of loads included) with one call. Unchanged subtrees are shared, never copied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace

from ...errors import InternalError
from ...ir.expr import Const, Expr, Var
from ...ir.visit import children, rebuild
from .nodes import (
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    Buffer,
    BulkCopy,
    BulkStore,
    BulkWait,
    CallExtern,
    For,
    If,
    Let,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    SetRegisters,
    Stmt,
    Store,
    ThreadAllReduce,
    Tile,
    Turn,
)

ExprFn = Callable[[Expr], "Expr | None"]
StmtFn = Callable[[Stmt], "Stmt | None"]


Memo = dict[int, tuple[Expr, Expr]]  # id(node) -> (node, its rewrite); the node kept alive
_LEAVES = (Var, Const)


def expr_children(e: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of `e`, the indices of a `Load` included."""
    if type(e) is Load:
        return e.indices
    return children(e)


def walk_expr(e: Expr) -> Iterator[Expr]:
    """Every node of `e` (loads' indices included), parents before children."""
    stack = [e]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(expr_children(node)))


def transform_expr(e: Expr, fn: ExprFn, memo: Memo | None = None, settle: bool = False) -> Expr:
    """Rewrite `e` bottom-up: `fn(node)` returns a replacement or None to keep the node.

    With a `memo` (a dict the caller keeps across calls for as long as `fn` gives the same
    answer for the same node), a subtree reached again, within `e` or in a later expression,
    is not rewritten again: unrolled copies share most of their subtrees, and a pass over them
    then visits each distinct node once instead of once per copy (variables and constants,
    cheaper to rewrite than to look up, are rewritten wherever they occur). With `settle`, the
    memo also records which results are their own rewrites (`fn` keeps them and their
    children), so that a later call on those results (simplify after simplify) finds them.
    """
    if memo is None:
        return _rewrite(e, fn)
    hit = memo.get(id(e))
    return hit[1] if hit is not None else _rewrite_new(e, fn, memo, settle)


def _rewrite(e: Expr, fn: ExprFn) -> Expr:
    kids = expr_children(e)
    if kids:
        new_kids = tuple([_rewrite(k, fn) for k in kids])
        e = _with_kids(e, kids, new_kids)
    replaced = fn(e)
    return e if replaced is None else replaced


def _rewrite_new(e: Expr, fn: ExprFn, memo: Memo, settle: bool) -> Expr:
    """`e`, not in `memo`, rewritten and remembered (children looked up before recursing;
    variables and constants, the commonest children, are rewritten without the memo)."""
    node = e
    settled = settle  # so far, every new child is known to be its own rewrite
    kids = expr_children(e)
    if kids:
        new_kids = []
        for kid in kids:
            if type(kid) in _LEAVES:
                replaced = fn(kid)
                new = kid if replaced is None else replaced
            else:
                hit = memo.get(id(kid))
                new = hit[1] if hit is not None else _rewrite_new(kid, fn, memo, settle)
            settled = settled and _settled(new, fn, memo)
            new_kids.append(new)
        node = _with_kids(e, kids, tuple(new_kids))
    replaced = fn(node)
    if replaced is not None:
        memo[id(e)] = (e, replaced)
        return replaced
    if settled:
        memo[id(node)] = (node, node)
    memo[id(e)] = (e, node)
    return node


def _settled(e: Expr, fn: ExprFn, memo: Memo) -> bool:
    """Whether `e` is known to be its own rewrite."""
    if type(e) in _LEAVES:
        return fn(e) is None
    hit = memo.get(id(e))
    return hit is not None and hit[1] is e


def _with_kids(e: Expr, kids: tuple[Expr, ...], new_kids: tuple[Expr, ...]) -> Expr:
    """`e` rebuilt on `new_kids`, or `e` itself when every child is the same object."""
    for new, old in zip(new_kids, kids):
        if new is not old:
            if type(e) is Load:
                return Load(e.buffer, new_kids, e.dtype)
            return rebuild(e, new_kids)
    return e


def substitute_expr(e: Expr, mapping: dict[Var, Expr], memo: Memo | None = None) -> Expr:
    """`e` with every Var that is a key of `mapping` replaced by its value (`memo` as in
    `transform_expr`, for one mapping)."""
    return transform_expr(e, mapping.get, memo)


def stmt_children(s: Stmt) -> tuple[Stmt, ...]:
    """The direct sub-statements of `s`."""
    if isinstance(s, (For, Let, Allocate)):
        return (s.body,)
    if isinstance(s, If):
        return (s.then,) if s.otherwise is None else (s.then, s.otherwise)
    if isinstance(s, Seq):
        return s.stmts
    return ()


def path_to(root: Stmt, target: Stmt) -> list[Stmt]:
    """The statements from `root` down to `target`, both included (by identity); [] where
    `target` is not in `root`."""
    if root is target:
        return [root]
    for kid in stmt_children(root):
        below = path_to(kid, target)
        if below:
            return [root, *below]
    return []


def with_children(s: Stmt, kids: tuple[Stmt, ...]) -> Stmt:
    """`s` with its sub-statements (in `stmt_children` order) replaced by `kids`."""
    if isinstance(s, Seq):
        return Seq(kids)
    if isinstance(s, If):
        return If(s.cond, kids[0], kids[1] if len(kids) > 1 else None)
    if isinstance(s, For):
        return For(s.var, s.min, s.extent, s.kind, kids[0], s.thread)
    if isinstance(s, Let):
        return Let(s.var, s.value, kids[0])
    if isinstance(s, Allocate):
        return Allocate(s.buffer, kids[0])
    return s


def walk_stmt(s: Stmt) -> Iterator[Stmt]:
    """Every statement of `s`, parents before children, in program order."""
    stack = [s]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(stmt_children(node)))


def stmt_buffers(s: Stmt) -> list[Buffer]:
    """The buffers statement `s` names in its own fields (its tiles' included; not those its
    expressions load, nor its sub-statements'): a store's, a copy's, a memory barrier's array,
    whatever the statement is."""
    found: list[Buffer] = []
    for f in fields(s):
        value = getattr(s, f.name)
        for item in value if isinstance(value, tuple) else (value,):
            if isinstance(item, Buffer):
                found.append(item)
            elif isinstance(item, Tile):
                found.append(item.buffer)
    return found


def stmt_exprs(s: Stmt) -> tuple[Expr, ...]:
    """The expressions held directly by `s` (not those of its sub-statements)."""
    if isinstance(s, Store):
        return (*s.indices, s.value)
    if isinstance(s, For):
        return (s.min, s.extent)
    if isinstance(s, If):
        return (s.cond,)
    if isinstance(s, Let):
        return (s.value,)
    if isinstance(s, Allocate):
        return tuple(s.buffer.shape)
    if isinstance(s, MatrixOp):
        value = () if s.value is None else (s.value,)
        return (*(i for t in (s.dst, *s.srcs) for i in t.base), *value)
    if isinstance(s, CallExtern):
        return s.args
    if isinstance(s, AsyncCopy):
        when = () if s.when is None else (s.when,)
        return (*s.dst_index, *s.src_index, *when)
    if isinstance(s, BulkCopy):
        return (*s.dst_index, *s.src_index, s.barrier_index)
    if isinstance(s, BulkStore):
        return (*s.dst_index, *s.src_index)
    if isinstance(s, MBarrier):
        return tuple(e for e in (s.index, s.parity, s.when) if e is not None)
    if isinstance(s, Turn):
        return () if s.when is None else (s.when,)
    return ()


def transform_stmt(
    s: Stmt,
    stmt_fn: StmtFn | None = None,
    expr_fn: ExprFn | None = None,
    memo: Memo | None = None,
) -> Stmt:
    """Rewrite `s` bottom-up.

    Every expression held by a statement is rewritten with `transform_expr(e, expr_fn, memo)`,
    then the statement is rebuilt from its rewritten parts and `stmt_fn(stmt)` may replace it
    (return None to keep it). Buffers (and their shapes) are kept as they are: they are shared
    by identity between an `Allocate` and its loads and stores.
    """
    return _StmtRewrite(stmt_fn, expr_fn, memo).go(s)


class _StmtRewrite:
    """`transform_stmt`'s walk. A method rather than a closure that calls itself: such a
    closure is a reference cycle, which kept the `memo` (every rewritten node of the walk)
    alive until the cyclic collector ran, after the build, over all of them."""

    def __init__(self, stmt_fn: StmtFn | None, expr_fn: ExprFn | None, memo: Memo | None):
        self.stmt_fn = stmt_fn
        self.expr_fn = expr_fn
        self.memo = memo

    def ex(self, e: Expr) -> Expr:
        return e if self.expr_fn is None else transform_expr(e, self.expr_fn, self.memo)

    def go(self, node: Stmt) -> Stmt:
        new = rebuild_stmt(node, self.ex, self.go)
        if self.stmt_fn is None:
            return new
        replaced = self.stmt_fn(new)
        return new if replaced is None else replaced


def rebuild_stmt(s: Stmt, ex: Callable[[Expr], Expr], go: Callable[[Stmt], Stmt]) -> Stmt:
    """`s` with its expressions mapped by `ex` and its sub-statements by `go` (shared when
    nothing changed); for passes that carry context down the tree."""
    if isinstance(s, Store):
        indices = tuple(ex(i) for i in s.indices)
        value = ex(s.value)
        if value is s.value and all(a is b for a, b in zip(indices, s.indices)):
            return s
        return Store(s.buffer, indices, value)
    if isinstance(s, For):
        lo, extent, body = ex(s.min), ex(s.extent), go(s.body)
        if lo is s.min and extent is s.extent and body is s.body:
            return s
        return For(s.var, lo, extent, s.kind, body, s.thread)
    if isinstance(s, If):
        cond, then = ex(s.cond), go(s.then)
        otherwise = None if s.otherwise is None else go(s.otherwise)
        if cond is s.cond and then is s.then and otherwise is s.otherwise:
            return s
        return If(cond, then, otherwise)
    if isinstance(s, Let):
        value, body = ex(s.value), go(s.body)
        if value is s.value and body is s.body:
            return s
        return Let(s.var, value, body)
    if isinstance(s, Allocate):
        body = go(s.body)
        return s if body is s.body else Allocate(s.buffer, body)
    if isinstance(s, Seq):
        stmts = tuple(go(x) for x in s.stmts)
        if all(a is b for a, b in zip(stmts, s.stmts)):
            return s
        return Seq(stmts)
    if isinstance(s, CallExtern):
        args = tuple(ex(a) for a in s.args)
        return s if all(a is b for a, b in zip(args, s.args)) else replace(s, args=args)
    if isinstance(s, MatrixOp):
        tiles = tuple(_tile(t, ex) for t in (s.dst, *s.srcs))
        value = None if s.value is None else ex(s.value)
        if value is s.value and all(a is b for a, b in zip(tiles, (s.dst, *s.srcs))):
            return s
        return MatrixOp(s.op, tiles[0], tiles[1:], value, s.clipped, s.bulk)
    if isinstance(s, AsyncCopy):
        dst, src = tuple(ex(i) for i in s.dst_index), tuple(ex(i) for i in s.src_index)
        when = None if s.when is None else ex(s.when)
        same = all(a is b for a, b in zip(dst + src, s.dst_index + s.src_index))
        if same and when is s.when:
            return s
        return AsyncCopy(s.dst, dst, s.src, src, s.lanes, when)
    if isinstance(s, BulkCopy):
        dst, src = tuple(ex(i) for i in s.dst_index), tuple(ex(i) for i in s.src_index)
        at = ex(s.barrier_index)
        if at is s.barrier_index and all(
            a is b for a, b in zip(dst + src, s.dst_index + s.src_index)
        ):
            return s
        return BulkCopy(s.dst, dst, s.src, src, s.shape, s.barrier, at)
    if isinstance(s, BulkStore):
        dst, src = tuple(ex(i) for i in s.dst_index), tuple(ex(i) for i in s.src_index)
        if all(a is b for a, b in zip(dst + src, s.dst_index + s.src_index)):
            return s
        return BulkStore(s.dst, dst, s.src, src, s.shape)
    if isinstance(s, MBarrier):
        index = ex(s.index)
        parity = None if s.parity is None else ex(s.parity)
        when = None if s.when is None else ex(s.when)
        if index is s.index and parity is s.parity and when is s.when:
            return s
        return replace(s, index=index, parity=parity, when=when)
    if isinstance(s, (Barrier, ThreadAllReduce, AsyncCommit, AsyncWait, BulkWait)):
        return s
    if isinstance(s, Turn):
        when = None if s.when is None else ex(s.when)
        return s if when is s.when else replace(s, when=when)
    if isinstance(s, SetRegisters):
        return s
    raise InternalError(f"unknown loop-IR statement {type(s).__name__}")


def _tile(t: Tile, ex: Callable[[Expr], Expr]) -> Tile:
    base = tuple(ex(i) for i in t.base)
    if all(a is b for a, b in zip(base, t.base)):
        return t
    return Tile(t.buffer, base, t.dims, t.shape)


def substitute_stmt(s: Stmt, mapping: dict[Var, Expr]) -> Stmt:
    """`s` with every use of a Var that is a key of `mapping` replaced by its value."""
    return transform_stmt(s, expr_fn=mapping.get, memo={})
