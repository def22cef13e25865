"""LLVM IR that only NVPTX has, shared by the target and its block collectives: the special
registers holding a thread's position, the block barrier, and shared memory.

A kernel's shared memory is laid out once, by `nvptx.plan` (`shared_layout.SharedLayout`):
every shared buffer and every scratch array of a block collective gets a region at a 16-byte
aligned offset, and the layout's size is the kernel's shared memory, which the launcher checks
and passes. The code here only places what the layout says. Up to 48 KB
(`shared_layout.STATIC_SHARED_LIMIT`, what a block may declare statically) each region is a
module-level ``addrspace(3)`` array of the region's size (the NVPTX backend declares those
``.shared``; ptxas packs them to the layout's size exactly). Above that, a block gets more
only as dynamic shared memory, which the launch sizes and the kernel opts into: every region
is then an offset into one ``extern`` array of ``[0 x i8]``, and address arithmetic still
folds into immediate offsets. Static arrays stay the rule below the limit because their sizes
tell LLVM how large an index can be, which lets it drop guards that one unsized array keeps.
"""

from __future__ import annotations

from llvmlite import ir

from ...loopir.memory.fragments import WARPGROUP
from ..llvm.intrinsics import function
from ..llvm.types import I8, I32, I64
from .shared_layout import SharedLayout

GLOBAL, SHARED, LOCAL = 1, 3, 5
SHARED_PTR = ir.PointerType(addrspace=SHARED)
DYNAMIC_SHARED = "dynamic_shared"  # the extern array of dynamic shared memory (a PTX name)
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


# the named barrier of a block's consumer threads (`first_threads_barrier`): past those of its
# warpgroups (1 + threadIdx.z, `bulk_copy.warpgroup_barrier`)
CONSUMERS_BARRIER = 8


def first_threads_barrier(b: ir.IRBuilder, threads: int) -> None:
    """``bar.sync`` of the block's first `threads` threads, the consumers of a producer
    warpgroup that has gone its own way (LLVM's intrinsic: convergent, never copied into the
    arms of a branch)."""
    name = "llvm.nvvm.barrier.cta.sync.aligned.count"
    fn = function(b.module, name, ir.VoidType(), [I32, I32])
    b.call(fn, [ir.Constant(I32, CONSUMERS_BARRIER), ir.Constant(I32, threads)])


# the first of the consumer warpgroups' turn barriers (`turn_barrier`), one a warpgroup
TURN_BARRIERS = CONSUMERS_BARRIER + 1


def turn_barrier(
    b: ir.IRBuilder, warpgroups: int, give: bool, when: ir.Value | None = None
) -> None:
    """The running warpgroup's turn: a take waits on its own barrier of two warpgroups'
    threads (``bar.sync``), a give arrives at the next one's (``bar.arrive``, which does not
    wait); with `when` (an i1), only where it holds. One statement that reads ``%tid.z`` and
    names the barrier itself: a barrier number computed by LLVM was held in a register through
    every step (attention, d = 128, causal: the consumers' products then serialised for want
    of registers), and each warpgroup's instruction picked by a predicate made ptxas
    serialise the products around it ("WG.AR in divergent path", C7520). Convergent, as
    LLVM's barrier intrinsics are: copied into the arms of a branch (which LLVM did to an edge
    block's turn), a warp whose threads took both arms would reach two barriers."""
    op = "bar.arrive" if give else "bar.sync"
    text = ["{", ".reg .pred q;", ".reg .u32 z;", "mov.u32 z, %tid.z;"]
    if give:
        text += ["add.u32 z, z, 1;", f"rem.u32 z, z, {warpgroups};"]
    text.append(f"add.u32 z, z, {TURN_BARRIERS};")
    if when is not None:
        text += ["setp.ne.u32 q, $0, 0;", f"@q {op} z, {2 * WARPGROUP};"]
    else:
        text.append(f"{op} z, {2 * WARPGROUP};")
    text.append("}")
    args = [] if when is None else [b.zext(when, I32)]
    kind = ir.FunctionType(ir.VoidType(), [a.type for a in args])
    constraints = ("r," if args else "") + "~{memory}"
    call = b.asm(kind, "\n".join(text), constraints, args, side_effect=True)
    call.attributes.add("convergent")  # never copied into the arms of a branch


def set_max_registers(b: ir.IRBuilder, count: int, grow: bool) -> None:
    """``setmaxnreg``: the running warpgroup's threads have `count` registers each from here
    on. LLVM's intrinsic, convergent: emitted as inline PTX, LLVM copied it into both arms of a
    branch on the thread index, and a warp's threads then ran two different ones (a hang)."""
    name = f"llvm.nvvm.setmaxnreg.{'inc' if grow else 'dec'}.sync.aligned.u32"
    b.call(function(b.module, name, ir.VoidType(), [I32]), [ir.Constant(I32, count)])


def shared_array(
    b: ir.IRBuilder, layout: SharedLayout, owner: object, name: str, part: int = 0
) -> ir.Value:
    """The region `part` of `owner` in `layout`, as an ``addrspace(3)`` pointer. Not cast to
    a generic pointer: LLVM's address-space inference would recover the space, but its
    load/store vectorizer, running before that, cannot see the alignment through the cast, and
    leaves shared tiles filled and read one word at a time."""
    offset, nbytes = layout.region(owner, part)
    module = b.module
    if layout.dynamic:
        base = module.globals.get(DYNAMIC_SHARED)
        if base is None:
            base = ir.GlobalVariable(module, ir.ArrayType(I8, 0), DYNAMIC_SHARED, addrspace=SHARED)
            base.linkage = "external"
            base.align = layout.align
            base.type = SHARED_PTR
        return b.gep(base, [ir.Constant(I64, offset)], inbounds=True, source_etype=I8, name=name)
    unique = f"{layout.kernel}.{name}.{offset}"  # the same region when a statement recurs
    memory = module.globals.get(unique)
    if memory is None:
        array_t = ir.ArrayType(I8, nbytes)
        memory = ir.GlobalVariable(module, array_t, unique, addrspace=SHARED)
        memory.linkage = "internal"
        memory.initializer = ir.Constant(array_t, ir.Undefined)
        memory.align = layout.align
        memory.type = SHARED_PTR  # opaque, as the kernel parameters are (llvmlite types it)
    return memory
