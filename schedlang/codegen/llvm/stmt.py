"""Loop-IR statements to LLVM IR: the statement half of the shared translator.

Serial loops (and ``unrolled`` ones the loop IR left, which LLVM is told to unroll, and
``vthread`` loops, which one thread runs in turn) become counted loops over an i64 index;
``vectorized`` loops go to `llvm.vector`; ``parallel`` and ``bound`` loops, allocations,
barriers, block collectives, tensor-core operations and asynchronous copies to the target. A
parallel loop nested in another runs serially: the outer one already occupies the threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from llvmlite import ir

from ...errors import InternalError
from ...loopir.core.nodes import (
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    BulkCopy,
    BulkStore,
    BulkWait,
    CallExtern,
    For,
    If,
    Let,
    MatrixOp,
    MBarrier,
    Seq,
    SetRegisters,
    Stmt,
    Store,
    ThreadAllReduce,
    Turn,
)
from .control import for_range, if_else, if_then
from .expr import ExprEmitter
from .function import FunctionScope
from .register_values import table_loop
from .target import Target
from .vector import emit_vectorized

_SERIAL_KINDS = ("serial", "unrolled", "vthread")


class StmtEmitter(ExprEmitter):
    """Translates the statements of one function (`scope`)."""

    def __init__(self, scope: FunctionScope, target: Target, in_parallel: bool = False) -> None:
        super().__init__(scope.builder, target)
        self.scope = scope
        self.in_parallel = in_parallel
        self.parallel_for: ir.Value | None = None

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, Seq):
            self.target.sequence(self, s)
        elif isinstance(s, For):
            self.loop(s)
        elif isinstance(s, If):
            self.branch(s)
        elif isinstance(s, Let):
            self.bind(s.var, self.value(s.value), index=False)
            self.stmt(s.body)
            del self.vars[s.var]
        elif isinstance(s, Allocate):
            self.target.allocate(self, s)
        else:
            self.target.before_leaf(self, s)
            self.leaf(s)
            self.target.after_leaf(self, s)

    def leaf(self, s: Stmt) -> None:
        if isinstance(s, Store):
            self.store(s)
        elif isinstance(s, Barrier):
            self.target.barrier(self, s)
        elif isinstance(s, ThreadAllReduce):
            self.target.thread_allreduce(self, s)
        elif isinstance(s, MatrixOp):
            self.target.matrix_op(self, s)
        elif isinstance(s, CallExtern):
            self.target.call_extern(self, s)
        elif isinstance(s, AsyncCopy):
            self.target.async_copy(self, s)
        elif isinstance(s, BulkCopy):
            self.target.bulk_copy(self, s)
        elif isinstance(s, MBarrier):
            self.target.mbarrier(self, s)
        elif isinstance(s, BulkStore):
            self.target.bulk_store(self, s)
        elif isinstance(s, BulkWait):
            self.target.bulk_wait(self, s)
        elif isinstance(s, AsyncCommit):
            self.target.async_commit(self)
        elif isinstance(s, AsyncWait):
            self.target.async_wait(self, s.pending)
        elif isinstance(s, SetRegisters):
            self.target.set_registers(self, s)
        elif isinstance(s, Turn):
            self.target.turn(self, s)
        else:
            raise InternalError(f"code generation cannot translate a {type(s).__name__}")

    def store(self, s: Store) -> None:
        if s.value.dtype != s.buffer.dtype:
            raise InternalError(
                f"a {s.value.dtype} value stored to the {s.buffer.dtype} buffer '{s.buffer.name}'"
            )
        self.scalar_store(s.buffer, s.indices, self.value(s.value))

    def loop(self, s: For) -> None:
        if s.kind in _SERIAL_KINDS or (s.kind == "parallel" and self.in_parallel):
            self.serial_loop(s)
        elif s.kind == "vectorized":
            emit_vectorized(self, s)
        elif s.kind == "parallel":
            self.target.parallel_loop(self, s)
        elif s.kind == "bound":
            self.target.bound_loop(self, s)
        else:
            raise InternalError(f"loop '{s.var.name}' has the unknown kind {s.kind!r}")

    def serial_loop(self, s: For) -> None:
        lo = self.index(s.min)
        hi = self.index_op("+", lo, self.index(s.extent))
        written = self.registers.written_in(s.body)
        self.target.before_loop(self, s)
        pre = self.b.block
        unroll, hoist = s.kind == "unrolled", self.target.hoists_out_of(s)
        with for_range(self.b, lo, hi, s.var.name, unroll=unroll, hoist=hoist) as i:
            carried = self.registers.enter_loop(i, pre, written)
            self.bind_loop(s, i)
            if table_loop(s):
                first = int(s.min.value)
                self.tables[s.var] = (range(first, first + int(s.extent.value)), i)
            with self.reuse.dominated(pre, i.parent):  # the header
                self.stmt(s.body)
                self.target.end_of_loop_body(self, s.body)
            self.registers.close_loop(carried, self.b.block)
        self.reuse.follows(pre)
        self.tables.pop(s.var, None)
        del self.vars[s.var]

    def branch(self, s: If) -> None:
        self.target.before_branch(self, s)
        cond = self.condition(s.cond)
        if s.otherwise is None:
            with self.when(cond):
                self.stmt(s.then)
                self.target.end_of_arm(self, s)
            return
        before = self.registers.snapshot()
        arms = []
        pre = self.b.block
        with if_else(self.b, cond) as (then, otherwise):
            for arm, body in ((then, s.then), (otherwise, s.otherwise)):
                with arm, self.reuse.dominated(pre):
                    self.registers.restore(before)
                    self.stmt(body)
                    self.target.end_of_arm(self, s)
                    arms.append((self.registers.snapshot(), self.b.block))
        self.registers.join(self.b, arms)
        self.reuse.follows(pre)

    @contextmanager
    def when(self, cond: ir.Value, name: str = "if") -> Iterator[None]:
        """Code in the ``with`` block runs only when `cond` holds; register arrays it writes
        (`register_values`) join their earlier values after it."""
        before = self.registers.snapshot()
        pre = self.b.block
        with if_then(self.b, cond, name):
            with self.reuse.dominated(pre):
                yield
            arm = (self.registers.snapshot(), self.b.block)
        self.registers.join(self.b, [(before, pre), arm])
        self.reuse.follows(pre)
