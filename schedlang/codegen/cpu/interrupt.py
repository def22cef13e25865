"""Ctrl-C for isl, generated as LLVM IR: a SIGINT handler that aborts isl's context.

isl holds the GIL while it computes, so Python's own handler only notes a Ctrl-C and the
``KeyboardInterrupt`` waits until isl returns, which for one hard question can be minutes.
isl checks an abort flag of its context at each step of its counted operations
(``isl_ctx_abort``); a handler in native code may set it, since it runs in the middle of isl's
computation without taking the GIL. This module writes that handler, so it needs no C compiler
on the user's machine, and `schedlang.runtime.interrupt` installs it around builds.

The handler reads everything from one state record that Python fills in: the context to abort,
``isl_ctx_abort``'s address (islpy links isl privately), the handler it replaced (Python's, which
it then calls, so that Python raises ``KeyboardInterrupt`` as soon as isl returns), and a
``defer`` flag: while isl runs Python callbacks, where an exception must not be raised, the
handler only aborts and marks ``pending`` for the caller to deliver afterwards.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from llvmlite import __version__ as llvmlite_version
from llvmlite import ir

from ..llvm.types import I32, PTR

HANDLER = "schedlang_interrupt"  # (signal number) -> void
STATE = "schedlang_interrupt_state"  # () -> the state record's address

# typed, so that llvmlite can call through them
ABORT = ir.FunctionType(ir.VoidType(), [PTR]).as_pointer()
PREVIOUS = ir.FunctionType(ir.VoidType(), [I32]).as_pointer()

# the state record: ctx, abort(ctx), previous(signal), defer, pending
FIELDS = (("ctx", PTR), ("abort", ABORT), ("previous", PREVIOUS), ("defer", I32), ("pending", I32))


def version() -> str:
    """What the handler's machine code depends on besides the host."""
    source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return f"{source} {llvmlite_version}"


def interrupt_module(triple: str) -> str:
    """The handler and its state as LLVM IR text for the host `triple`."""
    module = ir.Module(name="schedlang_interrupt")
    module.triple = triple
    record = ir.LiteralStructType([t for _, t in FIELDS])
    state = ir.GlobalVariable(module, record, "interrupt.state")
    state.linkage = "internal"
    state.initializer = ir.Constant(record, None)
    state.align = 8

    getter = ir.Function(module, ir.FunctionType(PTR, []), STATE)
    ir.IRBuilder(getter.append_basic_block("entry")).ret(state)

    handler = ir.Function(module, ir.FunctionType(ir.VoidType(), [I32]), HANDLER)
    b = ir.IRBuilder(handler.append_basic_block("entry"))

    def field(name: str) -> ir.Value:
        index = [n for n, _ in FIELDS].index(name)
        return b.gep(state, [I32(0), I32(index)], inbounds=True, source_etype=record)

    def load(name: str) -> ir.Value:
        t = dict(FIELDS)[name]
        return b.load_atomic(field(name), "monotonic", 4 if t == I32 else 8, typ=t)

    b.call(load("abort"), [load("ctx")])
    deferred = b.icmp_unsigned("!=", load("defer"), I32(0))
    with b.if_else(deferred) as (then, otherwise):
        with then:
            b.atomic_rmw("xchg", field("pending"), I32(1), "monotonic")
        with otherwise:
            b.call(load("previous"), [handler.args[0]])
    b.ret_void()
    return str(module)
