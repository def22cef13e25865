"""Loop-IR statements to LLVM IR: the statement half of the shared translator.

Serial loops (and ``unrolled`` ones the loop IR left, and ``vthread`` loops, which one thread
runs in turn) become counted loops over an i64 index; ``vectorized`` loops go to `llvm_vector`;
``parallel`` and ``bound`` loops, allocations, barriers and block collectives to the target. A
parallel loop nested in another runs serially: the outer one already occupies the threads.
"""

from __future__ import annotations

from llvmlite import ir

from ..errors import InternalError
from ..loopir.nodes import Allocate, Barrier, For, If, Let, Seq, Stmt, Store, ThreadAllReduce
from .control import for_range, if_else, if_then
from .llvm_expr import ExprEmitter
from .llvm_function import FunctionScope
from .llvm_types import to_storage
from .llvm_vector import emit_vectorized
from .target import Target

_SERIAL_KINDS = ("serial", "unrolled", "vthread")


class StmtEmitter(ExprEmitter):
    """Translates the statements of one function (`scope`)."""

    def __init__(self, scope: FunctionScope, target: Target, in_parallel: bool = False) -> None:
        super().__init__(scope.builder, target)
        self.scope = scope
        self.in_parallel = in_parallel
        self.lane_base: ir.Value | None = None
        self.parallel_for: ir.Value | None = None

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, Seq):
            for child in s.stmts:
                self.stmt(child)
        elif isinstance(s, Store):
            self.store(s)
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
        elif isinstance(s, Barrier):
            self.target.barrier(self)
        elif isinstance(s, ThreadAllReduce):
            self.target.thread_allreduce(self, s)
        else:
            raise InternalError(f"code generation cannot translate a {type(s).__name__}")

    def store(self, s: Store) -> None:
        if s.value.dtype != s.buffer.dtype:
            raise InternalError(
                f"a {s.value.dtype} value stored to the {s.buffer.dtype} buffer '{s.buffer.name}'"
            )
        value = to_storage(self.b, s.buffer.dtype, self.value(s.value))
        ptr = self.element(s.buffer, s.indices)
        self.b.store(value, ptr, align=self.align(s.buffer, s.indices))

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
        with for_range(self.b, lo, hi, s.var.name) as i:
            self.bind(s.var, i, index=True)
            self.stmt(s.body)
        del self.vars[s.var]

    def branch(self, s: If) -> None:
        cond = self.condition(s.cond)
        if s.otherwise is None:
            with if_then(self.b, cond):
                self.stmt(s.then)
            return
        with if_else(self.b, cond) as (then, otherwise):
            with then:
                self.stmt(s.then)
            with otherwise:
                self.stmt(s.otherwise)
