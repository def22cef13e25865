"""LLVM IR that only NVPTX has, shared by the target and its block collectives: the special
registers holding a thread's position, the block barrier, and shared memory as module-level
``addrspace(3)`` arrays (the NVPTX backend declares those as ``.shared``; a kernel's static
shared memory is their sum, which `nvptx_plan` counts the same way)."""

from __future__ import annotations

from llvmlite import ir

from .intrinsics import function
from .llvm_types import I32

GLOBAL, SHARED, LOCAL = 1, 3, 5
BUFFER_ALIGN = 16  # where every buffer of a kernel starts; runtime.cuda_arguments.ALIGN checks
SHARED_PTR = ir.PointerType(addrspace=SHARED)
_REGISTERS = {"threadIdx": "tid", "blockIdx": "ctaid"}


def special_register(b: ir.IRBuilder, tag: str) -> ir.Value:
    """The i32 value of the hardware index `tag` (``threadIdx.x``, ``blockIdx.y``, ...); the
    caller has checked the tag (`is_index_tag`)."""
    family, _, axis = tag.partition(".")
    name = f"llvm.nvvm.read.ptx.sreg.{_REGISTERS[family]}.{axis}"
    return b.call(function(b.module, name, I32, []), [])


def is_index_tag(tag: str) -> bool:
    family, _, axis = tag.partition(".")
    return family in _REGISTERS and axis in ("x", "y", "z")


def barrier(b: ir.IRBuilder) -> None:
    """``bar.sync 0``: every thread of the block waits; shared stores before it are visible."""
    b.call(function(b.module, "llvm.nvvm.barrier0", ir.VoidType(), []), [])


def shared_array(module: ir.Module, element: ir.Type, count: int, name: str) -> ir.Value:
    """A new shared array of `count` elements, as an ``addrspace(3)`` pointer. Not cast to a
    generic pointer: LLVM's address-space inference would recover the space, but its
    load/store vectorizer, running before that, cannot see the array's alignment through the
    cast, and leaves shared tiles filled and read one word at a time."""
    array_t = ir.ArrayType(element, max(count, 1))
    memory = ir.GlobalVariable(module, array_t, _fresh_name(module, name), addrspace=SHARED)
    memory.linkage = "internal"
    memory.initializer = ir.Constant(array_t, ir.Undefined)
    memory.align = BUFFER_ALIGN
    memory.type = SHARED_PTR  # opaque, as the kernel parameters are (llvmlite types it)
    return memory


def _fresh_name(module: ir.Module, prefix: str) -> str:
    name, k = prefix, 0
    while name in module.globals:
        k += 1
        name = f"{prefix}{k}"
    return name
