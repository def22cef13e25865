"""What the shared translator asks of a target.

`llvm.stmt.StmtEmitter` translates everything that means the same on every target. The rest
differs between a CPU and a GPU and is a method here: where memory of each scope lives and how an
`Allocate` obtains it, how a ``parallel`` loop runs, what a loop bound to ``threadIdx.x`` is, what
a barrier, a block collective and a warp's tensor-core operation are, how an asynchronous copy
into shared memory runs (`async_copy`), and which function implements a math call LLVM has no
intrinsic for.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import InternalError, LoweringError
from ...ir import dtype as dt
from .arith import float_to_int
from .types import round_half, to_storage

if TYPE_CHECKING:
    from ...loopir.core.nodes import (
        Allocate,
        AsyncCopy,
        Barrier,
        Buffer,
        BulkCopy,
        BulkStore,
        BulkWait,
        CallExtern,
        For,
        If,
        MatrixOp,
        MBarrier,
        Seq,
        SetRegisters,
        Stmt,
        ThreadAllReduce,
        Turn,
    )
    from .stmt import StmtEmitter


class Target(ABC):
    """A code generation target; `key` names it in compile caches. `contract`: whether
    ``a * b + c`` is emitted as ``llvm.fmuladd``, which the backend fuses into one instruction
    with a single rounding where the machine has one (off: each operation rounds, as in the
    reference evaluator)."""

    name: str
    contract: bool = True

    @property
    @abstractmethod
    def key(self) -> str:
        """Everything that changes the machine code: triple, CPU, features, options."""

    @abstractmethod
    def address_space(self, scope: str) -> int:
        """The LLVM address space of a buffer of `scope` ("global", "shared", "local")."""

    @abstractmethod
    def allocate(self, em: StmtEmitter, stmt: Allocate) -> None:
        """Make `stmt.buffer` exist (bind it in `em.buffers`), emit `stmt.body`, release it."""

    @abstractmethod
    def parallel_loop(self, em: StmtEmitter, loop: For) -> None:
        """Emit a loop of kind ``parallel`` (its iterations are independent)."""

    @abstractmethod
    def bound_loop(self, em: StmtEmitter, loop: For) -> None:
        """Emit a loop of kind ``bound`` (its variable is the hardware index `loop.thread`)."""

    @abstractmethod
    def barrier(self, em: StmtEmitter, stmt: Barrier) -> None:
        """Emit a barrier among the threads of a block (of a warpgroup: `Barrier`)."""

    @abstractmethod
    def thread_allreduce(self, em: StmtEmitter, stmt: ThreadAllReduce) -> None:
        """Emit the block collective `stmt` (see its docstring), which every thread reaches."""

    @abstractmethod
    def matrix_op(self, em: StmtEmitter, stmt: MatrixOp) -> None:
        """Emit the warp-collective tensor-core operation `stmt` (see its docstring)."""

    def call_extern(self, em: StmtEmitter, stmt: CallExtern) -> None:
        """Call a declared intrinsic's C function (`CallExtern`); only the CPU has them."""
        raise LoweringError(
            f"'{stmt.name}' is a C function of a declared intrinsic, which runs on the CPU; "
            "build with target='cpu'"
        )

    @abstractmethod
    def async_copy(self, em: StmtEmitter, stmt: AsyncCopy) -> None:
        """Start the copy `stmt` (see its docstring); its data is promised only after this
        thread's `async_wait` for the group it is committed with, so copying at once is a
        legal implementation (`llvm.async_copy.emit_synchronous_copy`)."""

    @abstractmethod
    def async_commit(self, em: StmtEmitter) -> None:
        """Close this thread's group of asynchronous copies issued since its last commit."""

    @abstractmethod
    def async_wait(self, em: StmtEmitter, pending: int) -> None:
        """Wait until at most `pending` of this thread's committed groups are in flight."""

    @abstractmethod
    def bulk_copy(self, em: StmtEmitter, stmt: BulkCopy) -> None:
        """Start the copy engine's copy `stmt`, counted on its memory barrier."""

    @abstractmethod
    def mbarrier(self, em: StmtEmitter, stmt: MBarrier) -> None:
        """Emit the memory-barrier operation `stmt` (see its docstring)."""

    @abstractmethod
    def bulk_store(self, em: StmtEmitter, stmt: BulkStore) -> None:
        """Start the copy engine's store `stmt`, as a group of its own."""

    @abstractmethod
    def bulk_wait(self, em: StmtEmitter, stmt: BulkWait) -> None:
        """Wait for this thread's bulk stores as `stmt` says."""

    def set_registers(self, em: StmtEmitter, stmt: SetRegisters) -> None:
        """Only a Hopper GPU's kernels hand registers over (`SetRegisters`)."""
        raise InternalError(f"{type(self).__name__} has no registers to hand over")

    def turn(self, em: StmtEmitter, stmt: Turn) -> None:
        """Only a GPU kernel's warpgroups take turns (`Turn`)."""
        raise InternalError(f"{type(self).__name__} has no warpgroups to take turns")

    def sequence(self, em: StmtEmitter, seq: Seq) -> None:
        """Translate the statements of `seq` in order (a target may move some elsewhere)."""
        for child in seq.stmts:
            em.stmt(child)

    def before_leaf(self, em: StmtEmitter, stmt: Stmt) -> None:  # noqa: B027 (no-op by default)
        """Called before each statement that is not a container (`Seq`, `For`, `If`, `Let`,
        `Allocate`): where a target orders background work against what follows."""

    def after_leaf(self, em: StmtEmitter, stmt: Stmt) -> None:  # noqa: B027 (no-op by default)
        """Called after each statement that is not a container."""

    def before_loop(self, em: StmtEmitter, loop: For) -> None:  # noqa: B027 (no-op by default)
        """Called before a serial loop starts."""

    def hoists_out_of(self, loop: For) -> bool:
        """Whether LLVM may move what does not change in the serial `loop` out of it."""
        return True

    def end_of_loop_body(self, em: StmtEmitter, body: Stmt) -> None:  # noqa: B027 (no-op by default)
        """Called at the end of a serial loop's body, before its next iteration."""

    def before_branch(self, em: StmtEmitter, branch: If) -> None:  # noqa: B027 (no-op by default)
        """Called before a branch's condition is evaluated."""

    def end_of_arm(self, em: StmtEmitter, branch: If) -> None:  # noqa: B027 (no-op by default)
        """Called at the end of each arm of `branch`, before the paths merge."""

    @abstractmethod
    def external_math(self, name: str, dtype: str) -> str:
        """The symbol of the scalar function computing `name` (``tanh``, ``erf``) in `dtype`."""

    @abstractmethod
    def named_math(self, symbol: str) -> str:
        """The symbol to call for the math function of C name `symbol` (`call_pure_extern`)."""

    def buffer_align(self, buffer: Buffer) -> int:
        """Bytes to which every buffer like `buffer` is known to start aligned; accesses
        state their alignment from it (`alignment`). Only the element size is guaranteed unless
        the target allocates, or the runtime checks, more."""
        return dt.itemsize(buffer.dtype)

    def float_to_int(self, b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
        """A float (or vector) converted to the integer `dtype`, saturating as the reference
        does (`llvm.arith.float_to_int`); a target whose own instruction already saturates
        overrides it where LLVM's generic lowering is longer."""
        return float_to_int(b, value, dtype)

    def to_storage(self, b: ir.IRBuilder, dtype: str, value: ir.Value) -> ir.Value:
        """A compute value of `dtype` as stored (`types.to_storage`); a target with an
        instruction for a conversion the generic one spells out in integer operations
        overrides it, to the same bits."""
        return to_storage(b, dtype, value)

    def round_half(self, b: ir.IRBuilder, dtype: str, value: ir.Value) -> ir.Value:
        """A float computed for a 16- or 8-bit `dtype` rounded to it, kept in float (every
        result of narrow-float arithmetic is), by the target's `to_storage` and back by a
        shift: on a GPU, conversions run at a quarter of the integer units' rate, and a
        dequantising kernel is bound by them."""
        return round_half(b, dtype, value, self.to_storage)

    def half_arithmetic(
        self, b: ir.IRBuilder, op: str, dtype: str, x: ir.Value, y: ir.Value
    ) -> ir.Value | None:
        """``x op y`` of a 16-bit `dtype` by the target's own instruction for it, kept in float
        as `round_half` keeps its results; None where the target has none (then the float
        operation is rounded by `round_half`)."""
        del b, op, dtype, x, y
        return None

    def mask_then_set(self, b: ir.IRBuilder, x: ir.Value, keep: int, bits: int) -> ir.Value:
        """``(x & keep) | bits`` of an i32 (a field and its constant neighbours)."""
        return b.or_(b.and_(x, ir.Constant(x.type, keep)), ir.Constant(x.type, bits))

    def fast_exp2(self, b: ir.IRBuilder, x: ir.Value, dtype: str) -> ir.Value | None:
        """``2 ** x`` by the target's approximate instruction (`sl.fast_exp2`), or None where it
        has none (then it is `exp2`)."""
        del b, x, dtype
        return None

    def native_math(self, name: str) -> bool:
        """Whether this target's LLVM backend lowers the intrinsic for `name` (``exp``, ...);
        when it does not, the call goes to `external_math` instead."""
        del name
        return True
