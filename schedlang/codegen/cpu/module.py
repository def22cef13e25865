"""The LLVM module of a lowered function for the CPU, with its C-callable entry point.

The entry ``i32 sl_<name>(ptr buffers, ptr sizes)`` takes an array of buffer pointers (the
parameters, in order) and an array of int64 sizes (`LoweredFunc.sizes`, in order), so one ctypes
signature calls every kernel. It unpacks them and calls the body function, whose buffer
arguments are ``noalias``: the runtime checks that no output overlaps another argument.
"""

from __future__ import annotations

from llvmlite import ir

from ...loopir.core.nodes import LoweredFunc
from ..llvm.function import FunctionScope
from ..llvm.stmt import StmtEmitter
from ..llvm.target import Target
from ..llvm.types import I32, I64, PTR
from .compiled import entry_symbol


def build_module(func: LoweredFunc, target: Target, triple: str) -> ir.Module:
    symbol = entry_symbol(func)
    module = ir.Module(name=symbol)
    module.triple = triple
    nparams, nsizes = len(func.params), len(func.sizes)

    body_t = ir.FunctionType(I32, [PTR] * nparams + [I64] * nsizes)
    body_fn = ir.Function(module, body_t, f"{symbol}.body")
    body_fn.linkage = "internal"
    for arg in body_fn.args[:nparams]:
        arg.add_attribute("noalias")
    scope = FunctionScope(body_fn)
    em = StmtEmitter(scope, target)
    for buffer, arg in zip(func.params, body_fn.args):
        em.buffers[buffer] = arg
    for var, arg in zip(func.sizes, body_fn.args[nparams:]):
        em.bind(var, arg, index=True)
    em.stmt(func.body)
    scope.finish()

    entry = ir.Function(module, ir.FunctionType(I32, [PTR, PTR]), symbol)
    b = ir.IRBuilder(entry.append_basic_block())
    buffers, sizes = entry.args
    args = []
    for k in range(nparams):
        slot = b.gep(buffers, [ir.Constant(I64, k)], inbounds=True, source_etype=PTR)
        args.append(b.load(slot, typ=PTR))
    for k in range(nsizes):
        slot = b.gep(sizes, [ir.Constant(I64, k)], inbounds=True, source_etype=I64)
        args.append(b.load(slot, typ=I64))
    b.ret(b.call(body_fn, args))
    return module
