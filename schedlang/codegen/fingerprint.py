"""A cache key for a lowered function: its printed loop nest plus what printing leaves out.

`str(func)` shows the loop nest but not every dtype (``1`` may be int32 or int64) nor which of
two variables of one name is meant, and two functions that print alike must not share machine
code. The key therefore hashes the printed text together with a typed listing of every node,
variables numbered by identity, and the target's key.
"""

from __future__ import annotations

import hashlib

from ..ir.expr import Const, Expr, Var
from ..loopir.core.nodes import (
    Allocate,
    AsyncCopy,
    AsyncWait,
    Buffer,
    BulkCopy,
    CallExtern,
    For,
    Let,
    LoweredFunc,
    MatrixOp,
    MBarrier,
    Stmt,
    Store,
    ThreadAllReduce,
)
from ..loopir.core.visit import expr_children, stmt_children, stmt_exprs, walk_stmt


def fingerprint(func: LoweredFunc, target_key: str) -> str:
    """A hex digest that changes whenever the machine code for `func` could."""
    names: dict[int, int] = {}
    tokens: list[str] = [target_key, str(func), f"turns:{func.turns}"]

    def ident(obj: object) -> int:
        return names.setdefault(id(obj), len(names))

    def buffer(b: Buffer) -> str:
        strided = b.strides is not None
        return f"buf{ident(b)}:{b.dtype}:{b.scope}:{len(b.shape)}:{strided}:{b.swizzle}"

    def expr(e: Expr) -> None:
        if isinstance(e, Var):
            tokens.append(f"var{ident(e)}:{e.dtype}")
            return
        if isinstance(e, Const):
            tokens.append(f"const:{e.dtype}:{e.value!r}")
            return
        label = getattr(e, "op", None) or getattr(e, "name", "")
        extra = buffer(e.buffer) if hasattr(e, "buffer") else ""
        kids = expr_children(e)
        tokens.append(f"{type(e).__name__}:{e.dtype}:{label}:{extra}:{len(kids)}")
        for kid in kids:
            expr(kid)

    for b in func.params:
        tokens.append(buffer(b))
        for e in (*b.shape, *(b.strides or ())):
            expr(e)
    for v in func.sizes:
        expr(v)
    for s in walk_stmt(func.body):
        tokens.append(_stmt_token(s, buffer, ident))
        for e in stmt_exprs(s):
            expr(e)
        if isinstance(s, ThreadAllReduce):  # its combiners are code too
            for comb, source, result in zip(s.combiners, s.sources, s.results):
                tokens.append(f"{buffer(source)}->{buffer(result)}:{s.tags}")
                for e in (comb.lhs, comb.rhs, comb.result, comb.identity):
                    expr(e)
    return hashlib.sha256("\n".join(tokens).encode()).hexdigest()


def _stmt_token(s: Stmt, buffer, ident) -> str:
    token = f"{type(s).__name__}:{len(stmt_children(s))}"
    if isinstance(s, For):
        token += f":var{ident(s.var)}:{s.var.dtype}:{s.kind}:{s.thread}"
    if isinstance(s, Let):
        token += f":var{ident(s.var)}:{s.var.dtype}"
    if isinstance(s, (Store, Allocate)):
        token += f":{buffer(s.buffer)}"
    if isinstance(s, CallExtern):  # its arguments are among `stmt_exprs`
        token += f":{s.name}:{s.modes}"
    if isinstance(s, MatrixOp):  # its bases and value are among `stmt_exprs`
        for t in (s.dst, *s.srcs):
            token += f":{s.op}:{buffer(t.buffer)}:{tuple(t.dims)}:{tuple(t.shape)}"
        token += ":clipped" if s.clipped else ""
        token += ":bulk" if s.bulk else ""
    if isinstance(s, AsyncCopy):  # its indices are among `stmt_exprs`
        token += f":{buffer(s.dst)}<-{buffer(s.src)}:{s.lanes}:{s.when is not None}"
    if isinstance(s, BulkCopy):  # its indices are among `stmt_exprs`
        token += f":{buffer(s.dst)}<-{buffer(s.src)}:{s.shape}:{buffer(s.barrier)}"
    if isinstance(s, MBarrier):
        token += f":{s.op}:{buffer(s.barrier)}:{s.count}:{s.pending}:{s.when is not None}"
        token += f":{s.per_warp}"
    if isinstance(s, AsyncWait):
        token += f":{s.pending}"
    return token
