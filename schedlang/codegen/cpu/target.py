"""The host CPU target: what `Target` means on one x86-64 (or other LLVM host) process.

Memory is one address space. ``local`` buffers of constant size live on the stack of the
function that allocates them (up to `STACK_LIMIT` bytes); other constant-size buffers are
allocated once per function call (a parallel task is a function, so a buffer allocated inside a
parallel loop is private to each task) and dynamic ones where their `Allocate` is, all with
``malloc``. Barriers are no-ops: one thread runs a block. Asynchronous copies copy at once
(their data is promised only after a wait, so that is legal) and commits and waits are nothing.
Loops bound to GPU indices, cross-thread reductions and tensor-core operations (and their
fragments) are errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import LoweringError
from ...ir import dtype as dt
from ...loopir.core.nodes import (
    FRAGMENT_SCOPES,
    Allocate,
    AsyncCopy,
    Barrier,
    Buffer,
    BulkCopy,
    BulkStore,
    BulkWait,
    CallExtern,
    For,
    MatrixOp,
    MBarrier,
    Seq,
    ThreadAllReduce,
)
from ..llvm.async_copy import emit_synchronous_copy
from ..llvm.control import if_then
from ..llvm.intrinsics import function
from ..llvm.storage import constant_count
from ..llvm.target import Target
from ..llvm.types import I64, PTR, storage_type
from ..status import OUT_OF_MEMORY
from .outline import sequence
from .parallel import parallel_loop

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

STACK_LIMIT = 64 * 1024
ALIGN = 64
TENSOR_CORES_NEED_CUDA = "tensor-core operations need the cuda target; build for target='cuda'"
BULK_COPIES_NEED_CUDA = (
    "pipeline(tma=True) fills its stages with the GPU's copy engine, which the cpu target does "
    "not have; build for target='cuda' (a Hopper GPU), or pipeline without tma"
)


class CpuTarget(Target):
    """The CPU this process runs on (`host` gives its triple, name and features)."""

    name = "cpu"

    def __init__(self, triple: str, cpu: str, features: str, contract: bool = True) -> None:
        self.triple, self.cpu, self.features = triple, cpu, features
        self.contract = contract

    def with_contract(self, contract: bool) -> CpuTarget:
        """This CPU, with ``a * b + c`` fused or not (`Target.contract`)."""
        if contract == self.contract:
            return self
        return CpuTarget(self.triple, self.cpu, self.features, contract)

    @property
    def key(self) -> str:
        options = "" if self.contract else " -fp-contract=off"
        return f"cpu {self.triple} {self.cpu} {self.features}{options}"

    def address_space(self, scope: str) -> int:
        return 0

    def allocate(self, em: StmtEmitter, stmt: Allocate) -> None:
        buffer = stmt.buffer
        if buffer.scope in FRAGMENT_SCOPES:  # reached before the ops that use it
            raise LoweringError(
                f"'{buffer.name}' is a {buffer.scope} fragment: " + TENSOR_CORES_NEED_CUDA
            )
        count = constant_count(buffer)
        size = dt.itemsize(buffer.dtype)
        if count is not None and buffer.scope == "local" and count * size <= STACK_LIMIT:
            ptr = em.scope.alloca(storage_type(buffer.dtype), max(count, 1), align=ALIGN)
        elif count is not None:
            ptr = _malloc_once(em, max(count, 1) * size)
        else:
            ptr = _malloc_here(em, buffer)
        em.buffers[buffer] = ptr
        em.stmt(stmt.body)
        del em.buffers[buffer]
        if count is None:
            em.b.call(_free(em.b.module), [ptr])

    def parallel_loop(self, em: StmtEmitter, loop: For) -> None:
        parallel_loop(em, loop)

    def sequence(self, em: StmtEmitter, seq: Seq) -> None:
        sequence(em, seq)

    def bound_loop(self, em: StmtEmitter, loop: For) -> None:
        raise LoweringError(
            f"loop {loop.var.name} is bound to {loop.thread}; the cpu target has no threads, "
            "use parallel/vectorize or target cuda"
        )

    def barrier(self, em: StmtEmitter, stmt: Barrier) -> None:
        del em, stmt  # one thread runs each block: nothing to wait for

    def thread_allreduce(self, em: StmtEmitter, stmt: ThreadAllReduce) -> None:
        tags = ", ".join(stmt.tags)
        raise LoweringError(
            f"a reduction across {tags} (from a reduce axis bound to {tags}) combines the "
            "threads of a GPU block; the cpu target has no threads, so build it with "
            "target='cuda' or leave the reduce axis unbound"
        )

    def matrix_op(self, em: StmtEmitter, stmt: MatrixOp) -> None:
        raise LoweringError(TENSOR_CORES_NEED_CUDA)

    def call_extern(self, em: StmtEmitter, stmt: CallExtern) -> None:
        """A C call: tile addresses as pointers, integers as C ints (the value returned, an
        int by TE's convention, is dropped)."""
        values = []
        for arg, mode in zip(stmt.args, stmt.modes):
            if mode is not None:
                values.append(em.element(arg.buffer, arg.indices))
            else:
                values.append(em.value(arg))
        module = em.b.module
        function = module.globals.get(stmt.name)
        if function is None:
            kinds = ir.FunctionType(ir.IntType(32), [v.type for v in values])
            function = ir.Function(module, kinds, stmt.name)
        em.b.call(function, values)

    def async_copy(self, em: StmtEmitter, stmt: AsyncCopy) -> None:
        emit_synchronous_copy(em, stmt)

    def async_commit(self, em: StmtEmitter) -> None:
        del em  # every copy has landed already

    def async_wait(self, em: StmtEmitter, pending: int) -> None:
        del em, pending

    def bulk_copy(self, em: StmtEmitter, stmt: BulkCopy) -> None:
        raise LoweringError(BULK_COPIES_NEED_CUDA)

    def mbarrier(self, em: StmtEmitter, stmt: MBarrier) -> None:
        raise LoweringError(BULK_COPIES_NEED_CUDA)

    def bulk_store(self, em: StmtEmitter, stmt: BulkStore) -> None:
        raise LoweringError(BULK_COPIES_NEED_CUDA)

    def bulk_wait(self, em: StmtEmitter, stmt: BulkWait) -> None:
        raise LoweringError(BULK_COPIES_NEED_CUDA)

    def external_math(self, name: str, dtype: str) -> str:
        return name if dtype == "float64" else f"{name}f"

    def named_math(self, symbol: str) -> str:
        if symbol.startswith("__"):
            raise LoweringError(
                f"{symbol!r} is one of CUDA's fast math functions, which the CPU has not; call "
                f"{symbol.lstrip('_')!r} from the C library on the cpu target"
            )
        return symbol


def _malloc(module: ir.Module) -> ir.Function:
    return function(module, "malloc", PTR, [I64])


def _free(module: ir.Module) -> ir.Function:
    return function(module, "free", ir.VoidType(), [PTR])


def _malloc_once(em: StmtEmitter, nbytes: int) -> ir.Value:
    """A heap block allocated at function entry, freed on every exit, checked where used."""
    with em.scope.at_entry() as b:
        ptr = b.call(_malloc(b.module), [ir.Constant(I64, nbytes)])
    em.scope.on_exit(lambda b: b.call(_free(b.module), [ptr]))
    _fail_if_null(em, ptr)
    return ptr


def _malloc_here(em: StmtEmitter, buffer: Buffer) -> ir.Value:
    b = em.b
    if buffer.strides is None:
        count = ir.Constant(I64, 1)
        for extent in buffer.shape:
            count = b.mul(count, _nonnegative(em, em.index(extent)), flags=("nsw",))
    else:
        count = ir.Constant(I64, 1)
        for extent, stride in zip(buffer.shape, buffer.strides):
            span = b.mul(_nonnegative(em, em.index(extent)), em.index(stride), flags=("nsw",))
            count = b.select(b.icmp_signed(">", span, count), span, count)
    nbytes = b.mul(count, ir.Constant(I64, dt.itemsize(buffer.dtype)), flags=("nsw",))
    ptr = b.call(_malloc(b.module), [nbytes])
    nonempty = b.icmp_signed(">", nbytes, ir.Constant(I64, 0))
    with if_then(b, nonempty, "alloc"):
        _fail_if_null(em, ptr)
    return ptr


def _nonnegative(em: StmtEmitter, value: ir.Value) -> ir.Value:
    zero = ir.Constant(I64, 0)
    return em.b.select(em.b.icmp_signed(">", value, zero), value, zero)


def _fail_if_null(em: StmtEmitter, ptr: ir.Value) -> None:
    b = em.b
    ok = b.append_basic_block("alloc.ok")
    b.cbranch(b.icmp_unsigned("==", ptr, ir.Constant(PTR, None)), em.scope.fail(OUT_OF_MEMORY), ok)
    b.position_at_end(ok)
