"""The NVPTX target: what `Target` means inside one CUDA kernel.

Buffers keep their address space, so accesses become ``ld.global``/``ld.shared`` directly:
kernel parameters are global (address space 1), shared buffers are regions of the kernel's
shared memory as the plan lays it out (`shared_layout.SharedLayout`: static arrays up to 48 KB,
one dynamic array above), and local buffers are SSA values where every access names its element
at compile time (`register_values`), stack slots otherwise. Every buffer starts
at a multiple of 16 bytes (`buffer_align`), so accesses state the alignment their indices prove
and LLVM emits 8- and 16-byte loads and stores for them. A loop bound to a hardware index reads
it from its special register and runs its body where the index is below the loop's extent; the
guard is left out where the launch shape already guarantees it. Barriers are ``bar.sync 0``;
block collectives (cross-thread reductions) are `nvptx.allreduce`'s, tensor-core operations
`nvptx.mma`'s (their fragments are local buffers of one lane's elements), asynchronous copies
``cp.async`` (`nvptx.async_copy`). Math that the NVPTX backend cannot lower itself calls
libdevice, or schedlang's own `softmath` where libdevice is missing.
"""

from __future__ import annotations

import struct
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
    For,
    If,
    MatrixOp,
    MBarrier,
    SetRegisters,
    Stmt,
    ThreadAllReduce,
    Turn,
)
from ...loopir.core.visit import walk_stmt
from ...loopir.memory import fragments
from ...loopir.memory.fragments import is_wgmma
from ..llvm.intrinsics import function
from ..llvm.register_values import promoted
from ..llvm.storage import constant_count
from ..llvm.target import Target
from ..llvm.types import F32, I32, I64, bfloat_bits, from_storage, splat, storage_type
from . import convert as nvptx_convert
from . import libdevice, softmath
from .allreduce import emit_allreduce
from .async_copy import emit_async_commit, emit_async_copy, emit_async_wait
from .bfloat import round_to_bfloat16
from .bulk_copy import (
    TensorMap,
    emit_bulk_copy,
    emit_bulk_store,
    emit_bulk_wait,
    emit_mbarrier,
    warpgroup_barrier,
)
from .bulk_copy import check_arch as check_bulk_arch
from .matrix_memory import LaneIndex, lane_index
from .mma import emit_matrix_op, operand_registers
from .nvvm import (
    GLOBAL,
    LOCAL,
    SHARED,
    barrier,
    first_threads_barrier,
    is_index_tag,
    set_max_registers,
    shared_array,
    special_register,
    turn_barrier,
)
from .plan import KernelPlan
from .shared_layout import BUFFER_ALIGN
from .wgmma import WgmmaOrder, only_products, proxy_fence, warp_uniform

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

_NATIVE_MATH = ("sqrt", "abs", "floor", "ceil", "round")


class NvptxTarget(Target):
    """Code for one kernel of a `DevicePlan`, for the GPU architecture `arch` (``sm_90``)."""

    name = "cuda"

    def __init__(
        self,
        arch: str,
        kernel: KernelPlan,
        buffers: tuple[Buffer, ...] = (),
        maps: dict[TensorMap, ir.Value] | None = None,
        contract: bool = True,
    ) -> None:
        self.arch = arch
        self.kernel = kernel
        self.contract = contract
        self._buffers = buffers  # the plan's, in parameter order
        self._maps = maps or {}  # tensor map -> its kernel parameter
        self._indices: dict[str, ir.Value] = {}  # hardware index -> its i64, read at entry
        self._registers: set[int] | None = None  # local buffers kept in SSA values (by id)
        self._lane: LaneIndex | None = None  # threadIdx.x's parts, for tensor-core operations
        self._products = any(is_wgmma(s) for s in walk_stmt(kernel.body))
        self._order = WgmmaOrder(operand_registers)

    @property
    def key(self) -> str:
        return f"cuda {self.arch}" + ("" if self.contract else " -fp-contract=off")

    def address_space(self, scope: str) -> int:
        return {"global": GLOBAL, "shared": SHARED}.get(scope, LOCAL)  # fragments are local

    def allocate(self, em: StmtEmitter, stmt: Allocate) -> None:
        buffer = stmt.buffer
        count = constant_count(buffer)
        if count is None or buffer.scope == "global":  # the plan (`plan`) rejects these first
            raise LoweringError(f"buffer '{buffer.name}' cannot be allocated inside a kernel")
        if buffer.scope in FRAGMENT_SCOPES:
            count = fragments.lane_size(buffer)  # what one lane holds
        if buffer.scope != "shared" and id(buffer) in self._promoted():
            em.registers.open(buffer)
            em.stmt(stmt.body)
            em.registers.close(buffer)
            return
        if buffer.scope == "shared":
            ptr = shared_array(em.b, self.kernel.shared, stmt, f"{buffer.name}.shared")
        else:
            ptr = em.scope.alloca(storage_type(buffer.dtype), max(count, 1), align=BUFFER_ALIGN)
        em.buffers[buffer] = ptr
        em.stmt(stmt.body)
        del em.buffers[buffer]

    def _promoted(self) -> set[int]:
        if self._registers is None:
            self._registers = promoted(self.kernel.body)
        return self._registers

    def buffer_align(self, buffer: Buffer) -> int:
        """Parameters are checked at launch, temporaries come from cuMemAlloc, shared arrays
        and stack slots are declared so."""
        return max(BUFFER_ALIGN, dt.itemsize(buffer.dtype))

    def parallel_loop(self, em: StmtEmitter, loop: For) -> None:
        raise LoweringError(
            f"loop {loop.var.name} is marked parallel, which means CPU threads; on cuda bind it "
            "to blockIdx/threadIdx instead (s[T].bind(axis, sl.thread_axis('blockIdx.x')))"
        )

    def bound_loop(self, em: StmtEmitter, loop: For) -> None:
        b = em.b
        tag = loop.thread or ""
        if not is_index_tag(tag):
            raise LoweringError(f"loop {loop.var.name} is bound to the unknown index {tag!r}")
        index = em.index_op("+", em.index(loop.min), self._hardware_index(em, tag))
        em.bind_loop(loop, index)
        if self.kernel.covers(loop):
            em.stmt(loop.body)
        else:
            limit = em.index_op("+", em.index(loop.min), em.index(loop.extent))
            with em.when(b.icmp_signed("<", index, limit), f"{loop.var.name}.in"):
                em.stmt(loop.body)
        del em.vars[loop.var]

    def _hardware_index(self, em: StmtEmitter, tag: str) -> ir.Value:
        """`tag`'s register, read once per kernel: every statement sits in its own thread
        loops, and one read each would be hundreds for LLVM to merge. In a kernel of warpgroup
        products, threadIdx.y and .z (the same on all lanes of a warp: blocks are 32 wide)
        come through a shuffle from lane 0, which tells ptxas that branches on them do not
        diverge within a warp; a product under a branch it thinks divergent (a warpgroup with
        no rows left at the edge of the matrix) makes it serialise every product."""
        if tag not in self._indices:
            with em.scope.at_entry() as entry:
                value = special_register(entry, tag)
                if self._products and tag in ("threadIdx.y", "threadIdx.z"):
                    value = warp_uniform(entry, value)
                self._indices[tag] = entry.zext(value, I64)
        return self._indices[tag]

    def barrier(self, em: StmtEmitter, stmt: Barrier) -> None:
        if self._products or stmt.warpgroup:  # the tensor cores or the copy engine read what
            proxy_fence(em)  # this thread wrote before the barrier
        if stmt.warpgroup:
            warpgroup_barrier(em, self._hardware_index(em, "threadIdx.z"))
        elif stmt.among:
            first_threads_barrier(em.b, stmt.among)
        else:
            barrier(em.b)

    def set_registers(self, em: StmtEmitter, stmt: SetRegisters) -> None:
        set_max_registers(em.b, stmt.count, stmt.grow)

    def turn(self, em: StmtEmitter, stmt: Turn) -> None:
        when = None if stmt.when is None else em.condition(stmt.when)
        turn_barrier(em.b, stmt.warpgroups, stmt.give, when)

    def before_leaf(self, em: StmtEmitter, stmt: Stmt) -> None:
        if self._products:
            self._order.before(em, stmt)

    def after_leaf(self, em: StmtEmitter, stmt: Stmt) -> None:
        if self._products:
            self._order.after(em, stmt)

    def hoists_out_of(self, loop: For) -> bool:
        """Not out of a loop around a loop of warpgroup products (a persistent block's tiles
        around their steps): what does not change over the tiles is cheap lane arithmetic
        (a causal mask's per-element offsets), and hoisted it stays live across every step,
        beside the accumulators (attention, d = 128, causal: 255 registers and spills,
        228 and none kept inside)."""
        return not (self._products and _steps_inside(loop.body))

    def before_loop(self, em: StmtEmitter, loop: For) -> None:
        if self._products:
            self._order.before_loop(em, loop)

    def end_of_loop_body(self, em: StmtEmitter, body: Stmt) -> None:
        if self._products:
            self._order.end_of_body(em, body)

    def before_branch(self, em: StmtEmitter, branch: If) -> None:
        if self._products:
            self._order.before_branch(em, branch)

    def end_of_arm(self, em: StmtEmitter, branch: If) -> None:
        if self._products:
            self._order.end_of_arm(em, branch)

    def thread_allreduce(self, em: StmtEmitter, stmt: ThreadAllReduce) -> None:
        emit_allreduce(em, stmt, self.kernel.block)

    def matrix_op(self, em: StmtEmitter, stmt: MatrixOp) -> None:
        if self._lane is None:  # threadIdx.x is the lane: the plan checked blockDim.x == 32
            lane = self._hardware_index(em, "threadIdx.x")
            warp = self._hardware_index(em, "threadIdx.y") if self._products else None
            with em.scope.at_entry() as entry:
                self._lane = lane_index(entry, lane, warp)
        emit_matrix_op(em, stmt, self._lane, self._order.made)

    def async_copy(self, em: StmtEmitter, stmt: AsyncCopy) -> None:
        emit_async_copy(em, stmt, self.arch)

    def async_commit(self, em: StmtEmitter) -> None:
        emit_async_commit(em, self.arch)

    def bulk_copy(self, em: StmtEmitter, stmt: BulkCopy) -> None:
        check_bulk_arch(self.arch)
        emit_bulk_copy(em, stmt, self._buffers, self._maps)

    def mbarrier(self, em: StmtEmitter, stmt: MBarrier) -> None:
        check_bulk_arch(self.arch)
        emit_mbarrier(em, stmt)

    def bulk_store(self, em: StmtEmitter, stmt: BulkStore) -> None:
        check_bulk_arch(self.arch)
        emit_bulk_store(em, stmt, self._buffers, self._maps)

    def bulk_wait(self, em: StmtEmitter, stmt: BulkWait) -> None:
        check_bulk_arch(self.arch)
        emit_bulk_wait(em, stmt)

    def async_wait(self, em: StmtEmitter, pending: int) -> None:
        emit_async_wait(em, pending, self.arch)

    def float_to_int(self, b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
        return nvptx_convert.float_to_int(b, value, dtype)

    def native_math(self, name: str) -> bool:
        return name in _NATIVE_MATH

    def to_storage(self, b: ir.IRBuilder, dtype: str, value: ir.Value) -> ir.Value:
        """A float rounded to bfloat16 by ``cvt.rn.bf16.f32`` (sm_80 on, `round_to_bfloat16`):
        one instruction for the six of the integer rounding, and two lanes of a vector in one
        (``cvt.rn.bf16x2.f32``); the same bits, but a NaN's payload."""
        if dtype != "bfloat16" or int(self.arch[3:].rstrip("af")) < 80:
            return super().to_storage(b, dtype, value)
        loaded = bfloat_bits(value, b)
        if loaded is not None:
            return loaded  # the bits a load widened, stored back as they are
        return round_to_bfloat16(b, value)

    def half_arithmetic(
        self, b: ir.IRBuilder, op: str, dtype: str, x: ir.Value, y: ir.Value
    ) -> ir.Value | None:
        """bfloat16 ``+``, ``-`` and ``*`` by ``add/sub/mul.rn.bf16`` (sm_90 on) on the
        operands' bits, two lanes an instruction in a vector (``.bf16x2``): the float32
        operation rounded to bfloat16 gives the same value (float32 holds more than twice
        bfloat16's digits and two more, so its rounding never decides the second one's), and
        on the FMA units, where ``cvt.rn.bf16.f32`` waits in the queue that conversions share:
        a dequantising kernel rounds twice a weight."""
        if dtype != "bfloat16" or op not in _BF16_OPS or int(self.arch[3:].rstrip("af")) < 90:
            return None
        if isinstance(x.type, ir.FloatType):
            bits = ir.FunctionType(ir.IntType(16), [ir.IntType(16), ir.IntType(16)])
            text = f"{_BF16_OPS[op]}.rn.bf16 $0, $1, $2;"
            operands = [_bfloat16_bits(b, x), _bfloat16_bits(b, y)]
            return from_storage(b, dtype, b.asm(bits, text, "=h,h,h", operands, False))
        lanes = x.type.count
        if lanes % 2:
            return None  # an odd vector: its last lane would need a word of its own
        words = ir.FunctionType(I32, [I32, I32])
        text = f"{_BF16_OPS[op]}.rn.bf16x2 $0, $1, $2;"
        pairs = [b.bitcast(_bfloat16_bits(b, v), ir.VectorType(I32, lanes // 2)) for v in (x, y)]
        result = ir.Constant(ir.VectorType(I32, lanes // 2), None)
        for k in range(lanes // 2):  # lane 2k in the low half of word k, as memory holds them
            at = ir.Constant(I32, k)
            both = [b.extract_element(p, at) for p in pairs]
            result = b.insert_element(result, b.asm(words, text, "=r,r,r", both, False), at)
        return from_storage(b, dtype, b.bitcast(result, ir.VectorType(ir.IntType(16), lanes)))

    def mask_then_set(self, b: ir.IRBuilder, x: ir.Value, keep: int, bits: int) -> ir.Value:
        """One ``lop3`` (``(a & b) | c``, table 0xEA): as an ``and`` and an ``or``, each with
        its constant, it is two, since the logic instruction holds one immediate; here ptxas
        keeps the other constant in a register set once."""
        text = "lop3.b32 $0, $1, $2, $3, 0xEA;"
        words = ir.FunctionType(I32, [I32, I32, I32])
        operands = [x, ir.Constant(I32, keep), ir.Constant(I32, bits)]
        return b.asm(words, text, "=r,r,r,r", operands, False)

    def fast_exp2(self, b: ir.IRBuilder, x: ir.Value, dtype: str) -> ir.Value | None:
        if dtype != "float32" or not isinstance(x.type, ir.FloatType):
            return None
        return b.call(function(b.module, "llvm.nvvm.ex2.approx.ftz.f", F32, [F32]), [x])

    def named_math(self, symbol: str) -> str:
        """libdevice's function for a CUDA math name: ``expf`` is ``__nv_expf``, the fast
        ``__expf`` is ``__nv_fast_expf``."""
        if libdevice.find() is None:
            raise LoweringError(
                f"call_pure_extern({symbol!r}) on the cuda target calls NVIDIA's libdevice, which "
                "was not found; install a CUDA toolkit or the nvidia-cuda-nvcc wheel (or set "
                "SCHEDLANG_LIBDEVICE to the file)"
            )
        base = symbol.lstrip("_")
        return f"__nv_fast_{base}" if symbol.startswith("__") else f"__nv_{base}"

    def external_math(self, name: str, dtype: str) -> str:
        if libdevice.find() is not None:
            return f"__nv_{name}" if dtype == "float64" else f"__nv_{name}f"
        symbol = softmath.symbol(name, dtype)
        if symbol is None:
            searched = ", ".join(str(p) for p in libdevice.candidates()) or "nowhere"
            why = (
                "SCHEDLANG_LIBDEVICE=none"
                if libdevice.refused()
                else f"{libdevice.FILE} was not found (searched: {searched})"
            )
            raise LoweringError(
                f"sl.{name} in {dtype} on the cuda target needs NVIDIA's libdevice: schedlang's "
                f"own math, used because {why}, has no {dtype} {name}; install a CUDA toolkit "
                "or the nvidia-cuda-nvcc wheel (or set SCHEDLANG_LIBDEVICE to the file), or "
                "compute it in float32"
            )
        return symbol


_BF16_OPS = {"+": "add", "-": "sub", "*": "mul"}


def _bfloat16_bits(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """The bits of a float32 that holds a bfloat16 value (a loaded or rounded one, or an exact
    conversion): those it was widened from, else its upper half (the lower is zero)."""
    bits = bfloat_bits(value)
    if bits is not None:
        return bits
    if isinstance(value, ir.Constant) and isinstance(value.type, ir.FloatType):
        word = struct.unpack("<I", struct.pack("<f", value.constant))[0]
        return ir.Constant(ir.IntType(16), word >> 16)
    if isinstance(value.type, ir.FloatType):
        upper = b.lshr(b.bitcast(value, I32), ir.Constant(I32, 16))
        return b.trunc(upper, ir.IntType(16))
    lanes = value.type.count
    upper = b.lshr(b.bitcast(value, ir.VectorType(I32, lanes)), splat(I32, 16, lanes))
    return b.trunc(upper, ir.VectorType(ir.IntType(16), lanes))


def _steps_inside(body: Stmt) -> bool:
    """Whether `body` holds a loop of steps: a serial loop of warpgroup products and other
    work (a loop of nothing but products, over K within a step, is not one)."""
    return any(
        isinstance(s, For)
        and s.kind == "serial"
        and any(map(is_wgmma, walk_stmt(s.body)))
        and not only_products(s.body, (MBarrier, BulkCopy))
        for s in walk_stmt(body)
    )
