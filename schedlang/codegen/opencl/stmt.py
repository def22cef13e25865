"""A kernel's body as OpenCL C statements.

Every work-item runs the whole body, as every CUDA thread runs a kernel's: a loop bound to a
hardware index is that index (``get_group_id(d)`` for ``blockIdx``, ``get_local_id(d)`` for
``threadIdx``), declared under the loop variable's name and guarded where the launch runs more
work-items than the loop has iterations (`nvptx.plan` says where it does not). Shared buffers
are ``__local`` arrays, which OpenCL C declares at the kernel's outermost scope; local buffers
are private arrays declared where they are allocated. Barriers wait for the work-group and make
its ``__local`` writes visible (its ``__global`` ones too where the kernel reads a global buffer
it writes). Each loop variable and ``Let`` is declared in the innermost C block; one whose name
that block already declares (the copies unrolling makes) gets a block of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ...errors import InternalError, LoweringError
from ...ir.expr import Const
from ...loopir.core.nodes import (
    Allocate,
    Barrier,
    For,
    If,
    Let,
    Seq,
    Stmt,
    Store,
    ThreadAllReduce,
)
from ...loopir.index.nonneg import nonnegative
from ..llvm.storage import constant_count
from ..nvptx.plan import KernelPlan
from .allreduce import emit_allreduce
from .expr import HARDWARE, ExprPrinter
from .types import compute_type

_INDENT = "  "


class KernelWriter:
    """The lines of one kernel's body (`lines`) and the ``__local`` arrays it declares first
    (`local_arrays`)."""

    def __init__(self, kernel: KernelPlan, printer: ExprPrinter, global_fence: bool) -> None:
        self.kernel = kernel
        self.p = printer
        self.lines: list[str] = []
        self.local_arrays: list[str] = []
        self._fence = "CLK_LOCAL_MEM_FENCE" + (" | CLK_GLOBAL_MEM_FENCE" if global_fence else "")
        self._scopes: list[set[str]] = [set()]

    # layout

    def line(self, text: str) -> None:
        self.lines.append(_INDENT * len(self._scopes) + text)

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        """``head {`` ... ``}``, a C block with its own declarations."""
        self.line(f"{head} {{" if head else "{")
        self._scopes.append(set())
        yield
        self._scopes.pop()
        self.line("}")

    @contextmanager
    def declaring(self, name: str) -> Iterator[None]:
        """Where `name` can be declared: here, or in a block of its own if here has it."""
        if name not in self._scopes[-1]:
            self._scopes[-1].add(name)
            yield
            return
        with self.block(""):
            self._scopes[-1].add(name)
            yield

    def barrier(self) -> None:
        self.line(f"barrier({self._fence});")

    def local_array(self, ctype: str, name: str, count: int) -> None:
        self.local_arrays.append(f"__local {ctype} {name}[{count}];")

    # statements

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, Seq):
            for child in s.stmts:
                self.stmt(child)
        elif isinstance(s, For):
            self._loop(s)
        elif isinstance(s, If):
            self._branch(s)
        elif isinstance(s, Let):
            name = self.p.names(s.var, s.var.name)
            with self.declaring(name):
                self.line(f"{compute_type(s.var.dtype)} {name} = {self.p(s.value)};")
                self.stmt(s.body)
        elif isinstance(s, Allocate):
            self._allocate(s)
        elif isinstance(s, Store):
            self.line(f"{self.p.store(s.buffer, s.indices, s.value)};")
        elif isinstance(s, Barrier):
            self.barrier()
        elif isinstance(s, ThreadAllReduce):
            emit_allreduce(self, s)
        else:  # `unsupported` refused the rest before any source was written
            raise InternalError(f"the opencl target cannot write {type(s).__name__}")

    def _loop(self, s: For) -> None:
        name = self.p.names(s.var, s.var.name)
        if nonnegative(s.min, lambda v: v in self.p.nonnegative or v.kind == "size"):
            self.p.nonnegative.add(s.var)
        if s.kind == "bound":
            self._bound_loop(s, name)
            return
        if s.kind == "parallel":
            raise LoweringError(
                f"loop {s.var.name} is marked parallel, which means CPU threads; on opencl bind "
                "it to blockIdx/threadIdx instead (s[T].bind(axis, sl.thread_axis('blockIdx.x')))"
            )
        start = self.p(s.min)
        end = self.p.expr(s.extent)
        if not _is_zero(s.min):
            end = f"({self.p.expr(s.min)} + {end})"
        if s.kind == "unrolled":
            self.line("#pragma unroll")
        head = f"for ({compute_type(s.var.dtype)} {name} = {start}; {name} < {end}; ++{name})"
        with self.block(head):
            self.stmt(s.body)

    def _bound_loop(self, s: For, name: str) -> None:
        """The loop's variable is the hardware index (a bound loop starts at 0)."""
        ctype = compute_type(s.var.dtype)
        with self.declaring(name):
            self.line(f"{ctype} {name} = ({ctype}){HARDWARE[s.thread]};")
            if self.kernel.covers(s):
                self.stmt(s.body)
                return
            with self.block(f"if ({name} < {self.p.expr(s.extent)})"):
                self.stmt(s.body)

    def _branch(self, s: If) -> None:
        """``if``, then ``else if`` for each ``If`` that is a whole ``else``, then ``else``."""
        self.line(f"if ({self.p(s.cond)}) {{")
        self._inner(s.then)
        while isinstance(s.otherwise, If):
            s = s.otherwise
            self.line(f"}} else if ({self.p(s.cond)}) {{")
            self._inner(s.then)
        if s.otherwise is not None:
            self.line("} else {")
            self._inner(s.otherwise)
        self.line("}")

    def _inner(self, s: Stmt) -> None:
        """`s` one level in, with declarations of its own."""
        self._scopes.append(set())
        self.stmt(s)
        self._scopes.pop()

    def _allocate(self, s: Allocate) -> None:
        buffer = s.buffer
        count = constant_count(buffer)
        if buffer.scope not in ("shared", "local") or count is None:  # the plan refused these
            raise InternalError(f"buffer '{buffer.name}' cannot be allocated inside a kernel")
        name = self.p.buffer(buffer)
        self.p.on_chip.add(id(buffer))
        ctype = compute_type(buffer.dtype)
        if buffer.scope == "shared":
            self.local_array(ctype, name, max(count, 1))
            self.stmt(s.body)
            return
        with self.declaring(name):
            self.line(f"{ctype} {name}[{max(count, 1)}];")
            self.stmt(s.body)


def _is_zero(e) -> bool:
    return isinstance(e, Const) and e.value == 0
