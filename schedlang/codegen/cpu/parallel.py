"""``parallel`` loops on the CPU: the body is outlined and the native pool (`pool`) runs it.

For a loop ``for v in [min, min + n)`` the kernel packs what the body reads from outside (buffer
pointers and variables) into a closure struct and calls ``schedlang_parallel_for(task, closure,
n)``, which the runtime links in. It splits ``[0, n)`` into chunks and calls ``task(closure, lo,
hi)`` on its threads; `task` unpacks the closure and calls the outlined body, whose buffer
arguments are ``noalias`` (the runtime checks that outputs overlap no other argument) so the
optimiser treats them as it treats the kernel's own arguments. A task fails only for want of
memory for a buffer of its own; that failure ends the kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...loopir.core.nodes import For
from ..llvm.control import for_range
from ..llvm.function import FunctionScope
from ..llvm.intrinsics import function
from ..llvm.types import I32, I64, PTR
from .outline import captures, check_status, fresh_name
from .pool_abi import PARALLEL_FOR

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter


def parallel_loop(em: StmtEmitter, loop: For) -> None:
    from ..llvm.stmt import StmtEmitter

    b, module = em.b, em.b.module
    variables, buffers = captures(em, loop)
    values = [em.vars[v].value for v in variables]
    name = fresh_name(module, f"{em.scope.fn.name}.parallel")

    body_t = ir.FunctionType(I32, [PTR] * len(buffers) + [v.type for v in values] + [I64] * 3)
    body_fn = ir.Function(module, body_t, f"{name}.body")
    body_fn.linkage = "internal"
    for arg in body_fn.args[: len(buffers)]:
        arg.add_attribute("noalias")
    scope = FunctionScope(body_fn)
    inner = StmtEmitter(scope, em.target, in_parallel=True)
    args = list(body_fn.args)
    for buffer, arg in zip(buffers, args):
        inner.buffers[buffer] = arg
    for var, arg in zip(variables, args[len(buffers) :]):
        inner.bind(var, arg, em.vars[var].index)
    base, lo, hi = args[-3:]
    with for_range(inner.b, lo, hi, loop.var.name) as i:
        inner.bind_loop(loop, inner.b.add(base, i, flags=("nsw",)))
        inner.stmt(loop.body)
    scope.finish()

    closure_t = ir.LiteralStructType([PTR] * len(buffers) + [v.type for v in values] + [I64])
    task_fn = ir.Function(module, ir.FunctionType(I32, [PTR, I64, I64]), name)
    task_fn.linkage = "internal"
    tb = ir.IRBuilder(task_fn.append_basic_block())
    closure, task_lo, task_hi = task_fn.args
    fields = [
        tb.load(_field(tb, closure_t, closure, k), typ=t) for k, t in enumerate(closure_t.elements)
    ]
    tb.ret(tb.call(body_fn, [*fields, task_lo, task_hi]))

    slot = em.scope.alloca(closure_t, align=8)
    captured = [em.pointer(buf) for buf in buffers] + values + [em.index(loop.min)]
    for k, value in enumerate(captured):
        b.store(value, _field(b, closure_t, slot, k))
    zero = ir.Constant(I64, 0)
    extent = em.index(loop.extent)
    count = b.select(b.icmp_signed(">", extent, zero), extent, zero)
    runner = function(module, PARALLEL_FOR, I32, [PTR, PTR, I64])
    status = b.call(runner, [task_fn, slot, count])
    check_status(em, status)


def _field(b: ir.IRBuilder, struct_t: ir.LiteralStructType, ptr: ir.Value, k: int) -> ir.Value:
    indices = [ir.Constant(I32, 0), ir.Constant(I32, k)]
    return b.gep(ptr, indices, inbounds=True, source_etype=struct_t)
