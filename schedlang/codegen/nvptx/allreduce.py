"""Block collectives (`ThreadAllReduce`) on NVIDIA GPUs: warp shuffles where the groups allow,
shared memory otherwise.

The hardware numbers the threads of an X*Y*Z block ``x + X*(y + Y*z)`` and packs that numbering
into warps of 32. When the reduced indices are the fastest-varying ones (x; or x and y; ...)
each group, the threads that agree on the other indices, is a contiguous run of G threads
starting at a multiple of G. TE's row reduction, a reduce axis bound to ``threadIdx.x``, is such
a case, and gets one of the first two forms:

- *warp*: the group lies inside one warp (G divides 32, or the whole block is one warp). A
  shuffle tree (``shfl.sync.down`` over halving offsets) leaves the group's combination on its
  first lane, lanes past the group's end taking no part; ``shfl.sync.idx`` from that lane then
  hands it to every member. No shared memory, no barrier.
- *warps*: G is a multiple of 32. Each warp reduces itself by shuffles, its first lane writes
  the result into shared memory, and after a barrier every member folds its group's G/32 warp
  results in order.
- *shared*: any other shape. Every thread writes its value into shared memory, and after a
  barrier folds its group's members in index order (G steps per thread: correct for any block,
  fast for none).

Every member of a group combines the same values in the same order, so all get the same bits.
The two shared-memory forms end with a barrier, so that the scratch can be written again (by
the next iteration of a loop around the collective). Each collective has its own scratch, one
shared array per source, whose sizes (`scratch_sizes`) the kernel's shared layout
(`nvptx.plan`) places next to its shared buffers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...ir import dtype as dt
from ...ir.expr import CommReducer, const
from ...loopir.core.nodes import ThreadAllReduce
from ..llvm.control import for_range, if_then
from ..llvm.intrinsics import function
from ..llvm.types import I32, I64, constant, from_storage, storage_type, to_storage
from .allreduce_forms import TAGS, WARP, Layout, layout
from .nvvm import barrier, shared_array, special_register

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

_FULL_MASK = 0xFFFFFFFF
_CLAMP = 0x1F  # shfl.sync's c operand for a whole warp: no segments, clamp at lane 31


def emit_allreduce(em: StmtEmitter, stmt: ThreadAllReduce, block: tuple[int, int, int]) -> None:
    """Every thread stores its group's combination of each source into the matching result."""
    plan = layout(stmt, block)
    b = em.b
    tid = _linear_tid(b, block)
    zero = (const(0),)
    values = [em.scalar_load(src, zero) for src in stmt.sources]
    if plan.form == "warp":
        mask = _warp_mask(b, tid, block)
        totals = [
            _warp_allreduce(em, c, v, tid, plan.group, mask) for c, v in zip(stmt.combiners, values)
        ]
    elif plan.form == "warps":
        totals = _warps_allreduce(em, stmt, values, tid, plan)
    elif plan.form == "shared":
        totals = _shared_allreduce(em, stmt, values, tid, block)
    else:
        totals = values
    for comb, result, value in zip(stmt.combiners, stmt.results, totals):
        b.store(
            to_storage(b, comb.dtype, value),
            em.element(result, zero),
            align=dt.itemsize(comb.dtype),
        )


def _linear_tid(b: ir.IRBuilder, block: tuple[int, int, int]) -> ir.Value:
    """``x + X*(y + Y*z)`` as i32, reading only the registers of axes the block has."""
    tid: ir.Value = ir.Constant(I32, 0)
    stride = 1
    for tag, n in zip(TAGS, block):
        if n > 1:
            own = b.mul(special_register(b, tag), ir.Constant(I32, stride), flags=("nuw", "nsw"))
            tid = b.add(tid, own, flags=("nuw", "nsw"))
        stride *= n
    return tid


def _warp_mask(b: ir.IRBuilder, tid: ir.Value, block: tuple[int, int, int]) -> ir.Value:
    """The lanes of this thread's warp that exist (the last warp of a block may be partial)."""
    total = block[0] * block[1] * block[2]
    tail = total % WARP
    if tail == 0:
        return ir.Constant(I32, _FULL_MASK)
    partial = ir.Constant(I32, (1 << tail) - 1)
    if total < WARP:
        return partial
    last = b.icmp_unsigned(">=", tid, ir.Constant(I32, total - tail))
    return b.select(last, partial, ir.Constant(I32, _FULL_MASK))


def _warp_allreduce(
    em: StmtEmitter, comb: CommReducer, value: ir.Value, tid: ir.Value, group: int, mask: ir.Value
) -> ir.Value:
    b = em.b
    position = b.urem(tid, ir.Constant(I32, group))
    first = b.urem(b.sub(tid, position), ir.Constant(I32, WARP))
    head = _tree_to_first_lane(em, comb, value, position, group, mask)
    return _shuffle(b, "idx", mask, head, first)


def _tree_to_first_lane(
    em: StmtEmitter,
    comb: CommReducer,
    value: ir.Value,
    position: ir.Value,
    group: int,
    mask: ir.Value,
) -> ir.Value:
    """The combination of the `group` lanes from this one's group's first lane, valid on that
    lane (`position` is this lane's place in its group)."""
    b = em.b
    exact = group & (group - 1) == 0  # a power of two: the first lane reads only its group
    offset = 1 << (group - 1).bit_length()
    while offset > 1:
        offset //= 2
        other = _shuffle(b, "down", mask, value, ir.Constant(I32, offset))
        combined = _combine(em, comb, value, other)
        if exact:
            value = combined
        else:
            inside = b.icmp_unsigned(
                "<", b.add(position, ir.Constant(I32, offset)), ir.Constant(I32, group)
            )
            value = b.select(inside, combined, value)
    return value


def _warps_allreduce(
    em: StmtEmitter, stmt: ThreadAllReduce, values: list[ir.Value], tid: ir.Value, plan: Layout
) -> list[ir.Value]:
    b = em.b
    full = ir.Constant(I32, _FULL_MASK)
    lane = b.urem(tid, ir.Constant(I32, WARP))
    warp = b.udiv(tid, ir.Constant(I32, WARP))
    heads = [
        _tree_to_first_lane(em, c, v, lane, WARP, full) for c, v in zip(stmt.combiners, values)
    ]
    scratch = _scratch(em, stmt, "warps")
    with if_then(b, b.icmp_unsigned("==", lane, ir.Constant(I32, 0)), "warp.head"):
        for comb, memory, head in zip(stmt.combiners, scratch, heads):
            _store(b, comb, memory, warp, head)
    barrier(b)
    count = plan.group // WARP
    start = b.mul(b.udiv(warp, ir.Constant(I32, count)), ir.Constant(I32, count))
    totals = [
        _fold(em, c, memory, start, [(count, 1)]) for c, memory in zip(stmt.combiners, scratch)
    ]
    barrier(b)
    return totals


def _shared_allreduce(
    em: StmtEmitter,
    stmt: ThreadAllReduce,
    values: list[ir.Value],
    tid: ir.Value,
    block: tuple[int, int, int],
) -> list[ir.Value]:
    b = em.b
    scratch = _scratch(em, stmt, "shared")
    for comb, memory, value in zip(stmt.combiners, scratch, values):
        _store(b, comb, memory, tid, value)
    barrier(b)
    # The group's members: this thread's index with every reduced axis running over its extent.
    first, loops, stride = tid, [], 1
    for tag, n in zip(TAGS, block):
        if tag in stmt.tags and n > 1:
            first = b.sub(first, b.mul(special_register(b, tag), ir.Constant(I32, stride)))
            loops.insert(0, (n, stride))  # outermost first: z, y, x
        stride *= n
    totals = [_fold(em, c, memory, first, loops) for c, memory in zip(stmt.combiners, scratch)]
    barrier(b)
    return totals


def _fold(
    em: StmtEmitter,
    comb: CommReducer,
    memory: ir.Value,
    first: ir.Value,
    loops: list[tuple[int, int]],
) -> ir.Value:
    """The combination, from the identity, of ``memory[first + sum(i_k * step_k)]`` over the
    nested loops ``(extent_k, step_k)``, in index order."""
    b = em.b
    acc = em.scope.alloca(storage_type(comb.dtype), 1, align=8)
    b.store(to_storage(b, comb.dtype, constant(comb.dtype, comb.identity.value)), acc)

    def nest(depth: int, index: ir.Value) -> None:
        if depth == len(loops):
            value = _load(b, comb, memory, index)
            old = from_storage(b, comb.dtype, b.load(acc, typ=storage_type(comb.dtype)))
            b.store(to_storage(b, comb.dtype, _combine(em, comb, old, value)), acc)
            return
        extent, step = loops[depth]
        with for_range(b, ir.Constant(I32, 0), ir.Constant(I32, extent), "member") as i:
            nest(depth + 1, b.add(index, b.mul(i, ir.Constant(I32, step))))

    nest(0, first)
    return from_storage(b, comb.dtype, b.load(acc, typ=storage_type(comb.dtype)))


def _combine(em: StmtEmitter, comb: CommReducer, x: ir.Value, y: ir.Value) -> ir.Value:
    """``comb.result`` with its lhs bound to `x` and its rhs to `y`."""
    em.bind(comb.lhs, x, index=False)
    em.bind(comb.rhs, y, index=False)
    result = em.value(comb.result)
    del em.vars[comb.lhs], em.vars[comb.rhs]
    return result


def _scratch(em: StmtEmitter, stmt: ThreadAllReduce, form: str) -> list[ir.Value]:
    """The collective's scratch arrays, one per source, where the kernel's layout put them."""
    shared = em.target.kernel.shared  # the NvptxTarget of the kernel being emitted
    return [
        shared_array(em.b, shared, stmt, f"allreduce.{form}", part)
        for part in range(len(stmt.combiners))
    ]


def _store(
    b: ir.IRBuilder, comb: CommReducer, memory: ir.Value, index: ir.Value, value: ir.Value
) -> None:
    element = storage_type(comb.dtype)
    ptr = b.gep(memory, [b.zext(index, I64)], inbounds=True, source_etype=element)
    b.store(to_storage(b, comb.dtype, value), ptr, align=dt.itemsize(comb.dtype))


def _load(b: ir.IRBuilder, comb: CommReducer, memory: ir.Value, index: ir.Value) -> ir.Value:
    element = storage_type(comb.dtype)
    ptr = b.gep(memory, [b.zext(index, I64)], inbounds=True, source_etype=element)
    return from_storage(b, comb.dtype, b.load(ptr, typ=element, align=dt.itemsize(comb.dtype)))


def _shuffle(
    b: ir.IRBuilder, kind: str, mask: ir.Value, value: ir.Value, arg: ir.Value
) -> ir.Value:
    """``shfl.sync.<kind>`` of a value of any scalar type, moved as 32-bit words."""
    t = value.type
    bits = t.width if isinstance(t, ir.IntType) else (64 if isinstance(t, ir.DoubleType) else 32)
    words = (bits + WARP - 1) // WARP
    wide = ir.IntType(WARP * words)
    raw = value if isinstance(t, ir.IntType) else b.bitcast(value, ir.IntType(bits))
    raw = b.zext(raw, wide) if bits < wide.width else raw
    shfl = function(b.module, f"llvm.nvvm.shfl.sync.{kind}.i32", I32, [I32] * 4)
    out = ir.Constant(wide, 0)
    for k in range(words):
        word = b.trunc(b.lshr(raw, ir.Constant(wide, WARP * k)), I32) if words > 1 else raw
        moved = b.call(shfl, [mask, word, arg, ir.Constant(I32, _CLAMP)])
        if words > 1:
            moved = b.shl(b.zext(moved, wide), ir.Constant(wide, WARP * k))
            out = b.or_(out, moved)
        else:
            out = moved
    out = b.trunc(out, ir.IntType(bits)) if bits < wide.width else out
    return out if isinstance(t, ir.IntType) else b.bitcast(out, t)
