"""The NVPTX target: what `Target` means inside one CUDA kernel.

Buffers are reached through generic pointers, which LLVM's address-space inference turns back
into ``ld.global``/``ld.shared``/``ld.local`` where it can see the origin: kernel parameters
are global (address space 1), shared buffers are module-level ``addrspace(3)`` arrays (one per
`Allocate`, sized from its constant shape), and local buffers are stack slots, which LLVM
promotes to registers when every index is known after unrolling. A loop bound to a hardware
index reads it from its special register and runs its body where the index is below the loop's
extent; the guard is left out where the launch shape already guarantees it. Barriers are
``bar.sync 0``. Math that the NVPTX backend cannot lower itself calls libdevice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir.expr import Const
from ..loopir.nodes import Allocate, For
from . import libdevice
from .control import if_then
from .intrinsics import function
from .llvm_types import I32, I64, PTR, storage_type
from .nvptx_plan import KernelPlan
from .storage import constant_count
from .target import Target

if TYPE_CHECKING:
    from .llvm_stmt import StmtEmitter

GLOBAL, SHARED, LOCAL = 1, 3, 5
SHARED_ALIGN = 16
_NATIVE_MATH = ("sqrt", "abs", "floor", "ceil", "round")
_REGISTERS = {"threadIdx": "tid", "blockIdx": "ctaid"}


class NvptxTarget(Target):
    """Code for one kernel of a `DevicePlan`, for the GPU architecture `arch` (``sm_90``)."""

    name = "cuda"

    def __init__(self, arch: str, kernel: KernelPlan) -> None:
        self.arch = arch
        self.kernel = kernel

    @property
    def key(self) -> str:
        return f"cuda {self.arch}"

    def address_space(self, scope: str) -> int:
        return {"global": GLOBAL, "shared": SHARED, "local": LOCAL}[scope]

    def allocate(self, em: StmtEmitter, stmt: Allocate) -> None:
        buffer = stmt.buffer
        count = constant_count(buffer)
        if count is None or buffer.scope == "global":  # nvptx_plan rejects these first
            raise LoweringError(f"buffer '{buffer.name}' cannot be allocated inside a kernel")
        element = storage_type(buffer.dtype)
        if buffer.scope == "shared":
            array_t = ir.ArrayType(element, max(count, 1))
            name = _fresh_name(em.b.module, f"{buffer.name}.shared")
            memory = ir.GlobalVariable(em.b.module, array_t, name, addrspace=SHARED)
            memory.linkage = "internal"
            memory.initializer = ir.Constant(array_t, ir.Undefined)
            memory.align = SHARED_ALIGN
            with em.scope.at_entry() as entry:
                ptr = entry.addrspacecast(memory, PTR)
        else:
            ptr = em.scope.alloca(element, max(count, 1), align=max(dt.itemsize(buffer.dtype), 8))
        em.buffers[buffer] = ptr
        em.stmt(stmt.body)
        del em.buffers[buffer]

    def parallel_loop(self, em: StmtEmitter, loop: For) -> None:
        raise LoweringError(
            f"loop {loop.var.name} is marked parallel, which means CPU threads; on cuda bind it "
            "to blockIdx/threadIdx instead (s[T].bind(axis, sl.thread_axis('blockIdx.x')))"
        )

    def bound_loop(self, em: StmtEmitter, loop: For) -> None:
        b = em.b
        tag = loop.thread or ""
        family, _, axis = tag.partition(".")
        if family not in _REGISTERS or axis not in ("x", "y", "z"):
            raise LoweringError(f"loop {loop.var.name} is bound to the unknown index {tag!r}")
        special = f"llvm.nvvm.read.ptx.sreg.{_REGISTERS[family]}.{axis}"
        register = function(b.module, special, I32, [])
        index = b.zext(b.call(register, []), I64)
        if not (isinstance(loop.min, Const) and int(loop.min.value) == 0):
            index = b.add(em.index(loop.min), index, flags=("nsw",))
        em.bind(loop.var, index, index=True)
        if self._covers(loop):
            em.stmt(loop.body)
        else:
            limit = b.add(em.index(loop.min), em.index(loop.extent), flags=("nsw",))
            with if_then(b, b.icmp_signed("<", index, limit), f"{loop.var.name}.in"):
                em.stmt(loop.body)
        del em.vars[loop.var]

    def _covers(self, loop: For) -> bool:
        """Whether the launch runs exactly the loop's iterations (no guard needed)."""
        if id(loop) in self.kernel.grid_loops:
            return True
        if not (loop.thread or "").startswith("threadIdx") or not isinstance(loop.extent, Const):
            return False
        return int(loop.extent.value) == self.kernel.block_size(loop.thread)

    def barrier(self, em: StmtEmitter) -> None:
        em.b.call(function(em.b.module, "llvm.nvvm.barrier0", ir.VoidType(), []), [])

    def native_math(self, name: str) -> bool:
        return name in _NATIVE_MATH

    def external_math(self, name: str, dtype: str) -> str:
        if libdevice.find() is None:
            searched = ", ".join(str(p) for p in libdevice.candidates()) or "nowhere"
            raise LoweringError(
                f"sl.{name} on the cuda target needs NVIDIA's libdevice ({libdevice.FILE}), which "
                f"was not found (searched: {searched}); install a CUDA toolkit or the "
                "nvidia-cuda-nvcc wheel, or set SCHEDLANG_LIBDEVICE to the file"
            )
        return f"__nv_{name}" if dtype == "float64" else f"__nv_{name}f"


def _fresh_name(module: ir.Module, prefix: str) -> str:
    name, k = prefix, 0
    while name in module.globals:
        k += 1
        name = f"{prefix}{k}"
    return name
