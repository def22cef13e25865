"""Asynchronous copies on NVPTX: ``cp.async`` from global into shared memory.

``cp.async.cg.shared.global [dst], [src], 16`` (through L2 only: a tile staged in shared memory
is read from there, so caching it in L1 too would only evict other data) moves 16 bytes;
``cp.async.ca.shared.global`` moves 4 or 8 (``.cg`` has only the 16-byte form). The thread goes
on at once; ``cp.async.commit_group`` closes the copies it issued since its last commit into a
group, and ``cp.async.wait_group N`` waits until at most N of its groups are in flight. These are
LLVM's ``llvm.nvvm.cp.async.*`` intrinsics (sm_80 and later, not arch-specific: they compile for
plain ``sm_90``). LLVM treats the wait as touching all memory, so no load of the destination
moves above it, and the ``bar.sync`` that the loop IR puts after it (other threads read the
tile) is a full barrier too.

Both addresses must be aligned to the bytes moved, or the instruction faults at run time. The
loop IR creates only copies it believes aligned; here the alignment is proven from the indices
(`alignment`, buffers starting at 16 bytes), and a copy it cannot prove is a `LoweringError`
naming the buffers rather than a kernel that may fault.

Only the thread that runs an `AsyncCopy` copies; `nvptx.uniform` narrows one outside the thread
loops to one thread, as it does a store, but leaves commits and waits with every thread: each
thread commits and waits for its own groups (an empty group completes at once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import InternalError, LoweringError
from ...ir.printer import expr_str
from ...loopir.core.nodes import AsyncCopy, Buffer
from ..llvm.async_copy import check_async_copy
from ..llvm.intrinsics import function
from ..llvm.types import I32
from .nvvm import GLOBAL, SHARED

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

FIRST_ARCH = 80  # cp.async came with Ampere
_GLOBAL_PTR = ir.PointerType(addrspace=GLOBAL)
_SHARED_PTR = ir.PointerType(addrspace=SHARED)


def check_arch(arch: str) -> None:
    """A LoweringError when `arch` (``sm_XY``, checked) predates ``cp.async``."""
    number = int(arch[3:].rstrip("af"))
    if number < FIRST_ARCH:
        raise LoweringError(
            f"asynchronous copies (cp.async) need sm_{FIRST_ARCH} or later, but the kernel is "
            f"compiled for {arch}; build for a newer architecture or leave the copies out"
        )


def emit_async_copy(em: StmtEmitter, s: AsyncCopy, arch: str) -> None:
    """``cp.async`` of `s`'s bytes from its global source to its shared destination."""
    check_arch(arch)
    nbytes = check_async_copy(em, s)
    if s.src.scope != "global" or s.dst.scope != "shared":
        raise InternalError(
            f"an asynchronous copy from the {s.src.scope} buffer '{s.src.name}' to the "
            f"{s.dst.scope} buffer '{s.dst.name}'; cp.async copies global to shared memory"
        )
    _check_aligned(em, s, nbytes)
    dst = _address(em, s.dst, s.dst_index, _SHARED_PTR)
    src = _address(em, s.src, s.src_index, _GLOBAL_PTR)
    cache = "cg" if nbytes == 16 else "ca"
    name = f"llvm.nvvm.cp.async.{cache}.shared.global.{nbytes}"
    if s.when is None:
        fn = function(em.b.module, name, ir.VoidType(), [_SHARED_PTR, _GLOBAL_PTR])
        em.b.call(fn, [dst, src])
        return
    # padding: a source size of 0 bytes fills the destination with zeros and reads nothing;
    # the source address then points at the buffer's start, never past its end
    b, read = em.b, em.condition(s.when)
    src = b.select(read, src, em.pointer(s.src))
    size = b.select(read, ir.Constant(I32, nbytes), ir.Constant(I32, 0))
    fn = function(em.b.module, name + ".s", ir.VoidType(), [_SHARED_PTR, _GLOBAL_PTR, I32])
    b.call(fn, [dst, src, size])


def emit_async_commit(em: StmtEmitter, arch: str) -> None:
    """``cp.async.commit_group``."""
    check_arch(arch)
    fn = function(em.b.module, "llvm.nvvm.cp.async.commit.group", ir.VoidType(), [])
    em.b.call(fn, [])


def emit_async_wait(em: StmtEmitter, pending: int, arch: str) -> None:
    """``cp.async.wait_group pending`` (an immediate: `pending` is a compile-time count)."""
    check_arch(arch)
    if not 0 <= pending < 2**31:
        raise InternalError(f"an asynchronous wait for {pending} pending groups")
    fn = function(em.b.module, "llvm.nvvm.cp.async.wait.group", ir.VoidType(), [I32])
    em.b.call(fn, [ir.Constant(I32, pending)])


def _check_aligned(em: StmtEmitter, s: AsyncCopy, nbytes: int) -> None:
    """A LoweringError unless both ends are proven aligned to `nbytes`."""
    unproven = [
        (buffer, index)
        for buffer, index in ((s.dst, s.dst_index), (s.src, s.src_index))
        if em.align(buffer, index) < nbytes
    ]
    if not unproven:
        return
    at = " and ".join(
        f"'{buffer.name}[{', '.join(expr_str(i) for i in index)}]'" for buffer, index in unproven
    )
    raise LoweringError(
        f"an asynchronous copy of {s.lanes} {s.dst.dtype} elements ({nbytes} bytes) from "
        f"'{s.src.name}' to '{s.dst.name}' must start at a multiple of {nbytes} bytes at both "
        f"ends, which is not proven for {at}: the copy's start must be a multiple of {s.lanes} "
        f"elements (with rows, and row strides, whose lengths are multiples of {s.lanes}); "
        "copy fewer elements at a time or pad the rows"
    )


def _address(em: StmtEmitter, buffer: Buffer, index: tuple, want: ir.PointerType) -> ir.Value:
    address = em.element(buffer, index)
    if address.type != want:
        raise InternalError(
            f"'{buffer.name}' is in address space {getattr(address.type, 'addrspace', '?')}, "
            f"but an asynchronous copy needs {want.addrspace} there"
        )
    return address
