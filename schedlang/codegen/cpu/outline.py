"""Loop nests moved into functions of their own: what a nest reads from outside is passed in.

Two users. ``parallel`` loops outline their body, which the pool runs on its threads
(`parallel`). And a function with many loop nests in a row (a hundred outputs, a chain of
hundreds of stages) gets each nest as a ``noinline`` function: LLVM's loop passes (the loop
vectorizer first) cost time that grows with the square of a function's loops, so one function
of three hundred loops took minutes where three hundred small ones take seconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir.expr import Expr, Var
from ...loopir.core.nodes import Allocate, AsyncCopy, Buffer, For, Load, Seq, Stmt, Store
from ...loopir.core.visit import stmt_exprs, walk_expr, walk_stmt
from ..llvm.function import FunctionScope
from ..llvm.types import I32, PTR
from ..status import OUT_OF_MEMORY

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

NESTS_TOGETHER = 16  # a sequence of more loop nests than this has each in a function


def sequence(em: StmtEmitter, seq: Seq) -> None:
    """The statements of `seq`, each loop nest in its own function when there are many."""
    nests = sum(isinstance(s, For) for s in seq.stmts)
    for s in seq.stmts:
        if nests > NESTS_TOGETHER and isinstance(s, For) and _outlinable(em, s):
            _outlined(em, s)
        else:
            em.stmt(s)


def _outlined(em: StmtEmitter, nest: For) -> None:
    from ..llvm.stmt import StmtEmitter

    variables, buffers = captures(em, nest)
    values = [em.vars[v].value for v in variables]
    fn_t = ir.FunctionType(I32, [PTR] * len(buffers) + [v.type for v in values])
    fn = ir.Function(em.b.module, fn_t, fresh_name(em.b.module, f"{em.scope.fn.name}.nest"))
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    for arg in fn.args[: len(buffers)]:
        arg.add_attribute("noalias")
    scope = FunctionScope(fn)
    inner = StmtEmitter(scope, em.target, in_parallel=em.in_parallel)
    for buffer, arg in zip(buffers, fn.args):
        inner.buffers[buffer] = arg
    for var, arg in zip(variables, fn.args[len(buffers) :]):
        inner.bind(var, arg, em.vars[var].index)
    inner.stmt(nest)
    scope.finish()
    check_status(em, em.b.call(fn, [em.pointer(buf) for buf in buffers] + values))


def _outlinable(em: StmtEmitter, nest: For) -> bool:
    """Whether every buffer `nest` uses is passed by pointer or made inside it (register
    arrays, kept as values by the emitter, stay where they are)."""
    inside = {s.buffer for s in walk_stmt(nest) if isinstance(s, Allocate)}
    used = set()
    for s in walk_stmt(nest):
        if isinstance(s, Store):
            used.add(s.buffer)
        for e in stmt_exprs(s):
            used.update(node.buffer for node in walk_expr(e) if isinstance(node, Load))
    return all(buffer in inside or buffer in em.buffers for buffer in used)


def check_status(em: StmtEmitter, status: ir.Value) -> None:
    """Continue when an outlined function's `status` is 0; else leave the kernel out of
    memory, the one failure an outlined function has."""
    b = em.b
    ok = b.append_basic_block("outlined.ok")
    b.cbranch(b.icmp_signed("==", status, ir.Constant(I32, 0)), ok, em.scope.fail(OUT_OF_MEMORY))
    b.position_at_end(ok)


def fresh_name(module: ir.Module, prefix: str) -> str:
    k = 0
    while f"{prefix}{k}" in module.globals:
        k += 1
    return f"{prefix}{k}"


def captures(em: StmtEmitter, stmt: Stmt) -> tuple[list[Var], list[Buffer]]:
    """The variables and buffers bound outside `stmt` that it uses, in a fixed order."""
    variables: dict[Var, None] = {}
    buffers: dict[Buffer, None] = {}

    def see(e: Expr) -> None:
        for node in walk_expr(e):
            if isinstance(node, Var) and node in em.vars:
                variables[node] = None
            elif isinstance(node, Load):
                see_buffer(node.buffer)

    def see_buffer(buffer: Buffer) -> None:
        if buffer in em.buffers:
            buffers[buffer] = None
        for e in (*buffer.shape, *(buffer.strides or ())):
            see(e)

    for s in walk_stmt(stmt):
        for e in stmt_exprs(s):
            see(e)
        if isinstance(s, (Store, Allocate)):
            see_buffer(s.buffer)
        elif isinstance(s, AsyncCopy):
            see_buffer(s.dst)
            see_buffer(s.src)
    return list(variables), list(buffers)
