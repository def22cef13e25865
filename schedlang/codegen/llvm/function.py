"""One generated function: its entry block for stack slots, its cleanups and its exits.

Generated functions return an ``i32`` status (0: done), or nothing (GPU kernels, which have no
failure paths). Stack slots (``alloca``) must sit in the
entry block to be promoted to registers, so the entry block only holds them and branches to the
code. Buffers released when the function ends register a cleanup, run on every exit: the normal
return and the failure return (out of memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from llvmlite import ir

from ..status import OK
from .types import I32, PTR


class FunctionScope:
    """Builds `fn`: `builder` starts positioned in the first code block."""

    def __init__(self, fn: ir.Function) -> None:
        self.fn = fn
        self.entry = fn.append_basic_block("entry")
        start = fn.append_basic_block("start")
        self.builder = ir.IRBuilder(self.entry)
        self.builder.branch(start)
        self.builder.position_at_end(start)
        self.cleanups: list[Callable[[ir.IRBuilder], None]] = []
        self.failures: dict[int, ir.Block] = {}

    @contextmanager
    def at_entry(self) -> Iterator[ir.IRBuilder]:
        """A builder positioned at the end of the entry block (before its branch)."""
        b = ir.IRBuilder(self.entry)
        b.position_before(self.entry.terminator)
        yield b

    def alloca(self, t: ir.Type, count: int = 1, align: int = 64) -> ir.Value:
        with self.at_entry() as b:
            slot = b.alloca(t, size=None if count == 1 else ir.Constant(I32, count))
            slot.align = align
        slot.type = PTR  # llvmlite types an alloca as a typed pointer, which GEPs would keep
        return slot

    def on_exit(self, cleanup: Callable[[ir.IRBuilder], None]) -> None:
        self.cleanups.append(cleanup)

    def fail(self, status: int) -> ir.Block:
        """A block that runs the cleanups and returns `status`."""
        if status not in self.failures:
            self.failures[status] = self.fn.append_basic_block(f"fail{status}")
        return self.failures[status]

    def finish(self) -> None:
        """Return OK from the current block; complete the failure blocks."""
        self._exit(self.builder, OK)
        for status, block in self.failures.items():
            self._exit(ir.IRBuilder(block), status)

    def _exit(self, b: ir.IRBuilder, status: int) -> None:
        for cleanup in reversed(self.cleanups):
            cleanup(b)
        if isinstance(self.fn.function_type.return_type, ir.VoidType):
            b.ret_void()  # a GPU kernel: nothing fails inside one
        else:
            b.ret(ir.Constant(I32, status))
