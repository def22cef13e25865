"""Bulk copies and memory barriers on NVPTX (sm_90): the copy engine (TMA) and ``mbarrier``.

A `BulkCopy` is ``cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx``:
the copy engine reads a box of a global tensor through a *tensor map*, a 128-byte descriptor of
the tensor (its address, sizes and strides) and of the box (its shape and the swizzle it writes
shared memory in), and counts the bytes it lands on a memory barrier. The map depends on the
tensor's address and sizes, so the runtime encodes it at each call (`runtime.tensor_maps`,
``cuTensorMapEncodeTiled``) and passes it by value: each map is a kernel parameter of 128
bytes, aligned to 64, marked ``grid_constant`` so that LLVM hands its own address in parameter
space to the instruction (``cvta.param``) instead of copying it to the stack. The kernel takes
them after the sizes, one per `TensorMap` of the plan, in order.

A box whose rows are longer than a swizzled buffer's swizzle goes as one copy per panel
(`codegen.llvm.expr.panels`): the copy engine writes rows of at most the swizzle's width, and
a panel is exactly such a box. Its address in shared memory is the buffer's own at the panel's
first element, which swizzling leaves where it is (row 0 of a 1024-byte aligned panel).

A `BulkStore` is the other direction, ``cp.async.bulk.tensor.Nd.global.shared::cta.tile.
bulk_group``: the copy engine reads a box from shared memory and writes it to the tensor
(clipped to its shape), as a *bulk group* of the issuing thread, committed at once; that
thread's ``cp.async.bulk.wait_group[.read]`` (`BulkWait`) waits for its groups' reads (the
shared memory may then be written again) or writes. The warpgroup that wrote the box meets at
a named barrier of its own (``bar.sync 1 + threadIdx.z, 128``), each writer's
``fence.proxy.async`` before it, since the copy engine reads shared memory through another
proxy than the threads' stores.

The barriers are PTX's ``mbarrier`` on 64-bit words of shared memory: ``init`` with the
arrivals per phase, ``arrive`` (with ``expect_tx``, the bytes the phase also waits for), and a
wait that polls ``try_wait.parity`` in a loop. LLVM has no intrinsics for the copy or the
transaction counts, so these are inline PTX, as MLIR's NVVM dialect emits them; every one is
``volatile`` with a memory clobber, so no load or store of shared memory moves across them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import InternalError, LoweringError
from ...ir.expr import Const, const
from ...loopir.core.nodes import Buffer, BulkCopy, BulkStore, BulkWait, MBarrier
from ...loopir.core.visit import walk_stmt
from ..llvm.expr import panels
from ..llvm.types import I32

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

FIRST_ARCH = 90  # the copy engine and mbarrier transaction counts came with Hopper
MAP_BYTES = 128
MAP_ALIGN = 64


@dataclass(frozen=True)
class TensorMap:
    """One tensor map a kernel takes: the global buffer it describes (by its place in the
    plan's buffers), the box one copy moves (innermost dimension first, as the copy engine
    counts them) and the swizzle it writes shared memory in (0, 32, 64 or 128 bytes)."""

    param: int
    dtype: str
    box: tuple[int, ...]
    swizzle: int
    store: bool = False  # written by `BulkStore`s rather than read by `BulkCopy`s

    @property
    def verb(self) -> str:
        return "written" if self.store else "read"

    @property
    def asked_by(self) -> str:
        """The schedule primitive that asked for the copy engine."""
        return "store_matrix(tma=True)" if self.store else "pipeline(tma=True)"


def check_arch(arch: str) -> None:
    """A LoweringError when `arch` (``sm_XY``, checked) predates the copy engine."""
    number = int(arch[3:].rstrip("af"))
    if number < FIRST_ARCH:
        raise LoweringError(
            f"bulk copies (pipeline(tma=True): the copy engine and its memory barriers) need "
            f"sm_{FIRST_ARCH} or later, but the kernel is compiled for {arch}; build for a "
            "Hopper GPU, or pipeline without tma"
        )


def tensor_maps(plan_buffers: tuple[Buffer, ...], bodies) -> tuple[TensorMap, ...]:
    """The tensor maps the bulk copies and stores of `bodies` use, each once, in order of
    first use."""
    found: list[TensorMap] = []
    for body in bodies:
        for s in walk_stmt(body):
            if isinstance(s, (BulkCopy, BulkStore)):
                m = _map_of(s, plan_buffers)
                if m not in found:
                    found.append(m)
    return tuple(found)


def _param(tensor: Buffer, plan_buffers: tuple[Buffer, ...]) -> int:
    param = next((k for k, b in enumerate(plan_buffers) if b is tensor), None)
    if param is None:
        raise InternalError(f"the copy engine's tensor '{tensor.name}' is not a kernel parameter")
    return param


def _map_of(s: BulkCopy | BulkStore, plan_buffers: tuple[Buffer, ...]) -> TensorMap:
    if isinstance(s, BulkStore):  # a box of 128-byte rows: one copy
        box = tuple(reversed(s.shape))
        return TensorMap(_param(s.dst, plan_buffers), s.dst.dtype, box, s.src.swizzle, True)
    param = _param(s.src, plan_buffers)
    box = list(reversed(s.shape))
    cut = panels(s.dst)
    if cut is not None:
        box[0] = cut[2]  # one copy per panel
    return TensorMap(param, s.dst.dtype, tuple(box), s.dst.swizzle)


def emit_bulk_copy(
    em: StmtEmitter, s: BulkCopy, buffers: tuple[Buffer, ...], maps: dict[TensorMap, ir.Value]
) -> None:
    """The copy of `s`'s box (one instruction per panel) into its shared buffer; `buffers`
    are the plan's (`TensorMap.param`), `maps` the kernel's map parameters."""
    rank = len(s.shape)
    if not 1 <= rank <= 5:
        raise LoweringError(f"a bulk copy of a {rank}-dimensional box; the copy engine moves 1-5")
    m = _map_of(s, buffers)
    tmap = em.b.ptrtoint(maps[m], ir.IntType(64))
    bar = _shared_address(em, s.barrier, (s.barrier_index,))
    width = s.shape[-1]
    step = m.box[0]
    lead = s.dst_index[: len(s.dst_index) - rank]
    inner = s.dst_index[len(s.dst_index) - rank :]
    if any(not (isinstance(i, Const) and int(i.value) == 0) for i in inner):
        raise InternalError("a bulk copy must fill its buffer's box from its first element")
    coords = [em.value(i) for i in reversed(s.src_index)]
    coords = [_i32(em, c) for c in coords]
    for start in range(0, width, step):
        at = (*lead, *inner[:-1], const(start, inner[-1].dtype))
        dst = _shared_address(em, s.dst, at)
        first = em.b.add(coords[0], ir.Constant(I32, start)) if start else coords[0]
        places = ", ".join(f"${k + 3}" for k in range(rank))
        text = (
            f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx"
            f"::bytes [$0], [$1, {{{places}}}], [$2];"
        )
        args = [dst, tmap, bar, first, *coords[1:]]
        _asm(em, text, "r,l,r" + ",r" * rank, args)


def emit_bulk_store(
    em: StmtEmitter, s: BulkStore, buffers: tuple[Buffer, ...], maps: dict[TensorMap, ir.Value]
) -> None:
    """The store of `s`'s box from shared memory, committed as a bulk group of its own."""
    rank = len(s.shape)
    tmap = em.b.ptrtoint(maps[_map_of(s, buffers)], ir.IntType(64))
    src = _shared_address(em, s.src, s.src_index)
    coords = [_i32(em, em.value(i)) for i in reversed(s.dst_index)]
    places = ", ".join(f"${k + 2}" for k in range(rank))
    text = (
        f"cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group [$0, {{{places}}}], [$1];"
    )
    _asm(em, text, "l,r" + ",r" * rank, [tmap, src, *coords])
    _asm(em, "cp.async.bulk.commit_group;", "", [])


def emit_bulk_wait(em: StmtEmitter, s: BulkWait) -> None:
    """Wait until at most `s.pending` of this thread's bulk stores still read (or write)."""
    read = ".read" if s.read else ""
    _asm(em, f"cp.async.bulk.wait_group{read} {s.pending};", "", [])


def warpgroup_barrier(em: StmtEmitter, group: ir.Value) -> None:
    """``bar.sync`` of the 128 threads of warpgroup `group` (an i64), on a named barrier of
    its own: 0 is the block's."""
    named = em.b.add(_i32(em, group), ir.Constant(I32, 1))
    _asm(em, "bar.sync $0, 128;", "r", [named]).attributes.add("convergent")  # as turn_barrier


def emit_mbarrier(em: StmtEmitter, s: MBarrier) -> None:
    """`s`'s operation on its barrier slot (module doc)."""
    at = _shared_address(em, s.barrier, (s.index,))
    if s.op == "init":
        _asm(em, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r", [at, ir.Constant(I32, s.count)])
        _asm(em, "fence.mbarrier_init.release.cluster;", "", [])
    elif s.op == "arrive":
        with _when(em, s):
            if s.count:
                text = "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;"
                _asm(em, text, "r,r", [at, ir.Constant(I32, s.count)])
            elif s.per_warp:  # predicated, not a branch: products may be in flight across it
                text = (
                    "{ .reg .pred p; .reg .u32 l; bar.warp.sync -1; mov.u32 l, %laneid; "
                    "setp.eq.u32 p, l, 0; @p mbarrier.arrive.shared::cta.b64 _, [$0]; }"
                )
                _asm(em, text, "r", [at])
            else:
                _asm(em, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r", [at])
    elif s.op == "wait":
        _wait(em, at, _i32(em, em.value(s.parity)))
    else:
        raise InternalError(f"unknown memory-barrier operation {s.op!r}")


@contextmanager
def _when(em: StmtEmitter, s: MBarrier) -> Iterator[None]:
    if s.when is None:
        yield
        return
    with em.b.if_then(em.condition(s.when)):
        yield


def _wait(em: StmtEmitter, at: ir.Value, parity: ir.Value) -> None:
    """Poll ``try_wait.parity`` until the phase of `parity` has completed. The threads that
    wait together leave the loop together (a vote of the warp's active threads): ptxas takes
    a loop whose exit may differ between a warp's threads for divergent control flow, and
    serialises every warpgroup product of the kernel whose registers it must fence after it
    (C7520)."""
    b = em.b
    poll = b.append_basic_block("mbarrier.wait")
    done = b.append_basic_block("mbarrier.done")
    b.branch(poll)
    b.position_at_end(poll)
    text = (
        "{ .reg .pred p, q; .reg .b32 m; "
        "mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
        "activemask.b32 m; vote.sync.all.pred q, p, m; selp.u32 $0, 1, 0, q; }"
    )
    ty = ir.FunctionType(I32, [I32, I32])
    ready = b.asm(ty, text, "=r,r,r,~{memory}", [at, parity], side_effect=True)
    b.cbranch(b.icmp_unsigned("!=", ready, ir.Constant(I32, 0)), done, poll)
    b.position_at_end(done)


def _asm(em: StmtEmitter, text: str, constraints: str, args: list) -> ir.CallInstr:
    clobber = "~{memory}" if not constraints else ",~{memory}"
    ty = ir.FunctionType(ir.VoidType(), [a.type for a in args])
    return em.b.asm(ty, text, constraints + clobber, args, side_effect=True)


def _shared_address(em: StmtEmitter, buffer: Buffer, index: tuple) -> ir.Value:
    """The 32-bit shared-memory address of an element."""
    if buffer.scope != "shared":
        raise InternalError(f"'{buffer.name}' is in {buffer.scope} memory, not shared")
    return em.b.ptrtoint(em.element(buffer, index), I32)


def _i32(em: StmtEmitter, value: ir.Value) -> ir.Value:
    if value.type == I32:
        return value
    if isinstance(value.type, ir.IntType) and value.type.width > 32:
        return em.b.trunc(value, I32)
    return em.b.sext(value, I32)
