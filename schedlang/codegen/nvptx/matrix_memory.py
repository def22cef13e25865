"""Moving tensor-core fragments between memory and a lane's slots: ``ldmatrix`` or plain
loads in, plain (paired) stores out.

Each lane of a warp holds the fragment elements `fragments.layout` gives it. Those positions are
affine in the lane's group ``g = lane // 4`` and thread-in-group ``t = lane % 4`` (checked for
every slot, `_affine`), so the element a lane loads or stores for a slot is an index expression
in two lane variables, and the shared translator computes its address and proves its alignment
(`alignment`) as for any access: slots ``2j, 2j + 1`` are neighbours in the tile, and where
their buffer dimension is contiguous and the pair is provably aligned they move as one 4- or
8-byte access.

``ldmatrix.m8n8`` loads 8 x 8 matrices of 16-bit elements from shared memory, each lane giving
the address of one 8-element row (lanes ``8i .. 8i + 7`` the rows of matrix ``i``), and leaves
in each lane's register ``i`` the elements ``(g, 2t)`` and ``(g, 2t + 1)`` of matrix ``i`` (the
transposed matrix's with ``.trans``), low half first. With matrix ``i`` the 8 x 8 block of the
tile whose corner lane 0's slot ``2i`` holds, that is the fragment layout of A (``.x4``) and of
B (``.x4`` for n = 16, ``.x2`` for n = 8) exactly, as long as the memory rows run along the
tile axis that a register's two elements share (A: columns, B: rows); when memory runs along
the other axis, ``.trans`` gives the same registers. A row must start at a multiple of 16 bytes:
where that is not proven, or the tile is not in shared memory, or neither tile axis is
contiguous, the lanes load their elements themselves.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import InternalError
from ...ir import dtype as dt
from ...ir.expr import Binary, Cast, Compare, Const, Expr, Var, const
from ...loopir.core.nodes import Buffer, Tile
from ...loopir.memory import fragments
from ..llvm import arith
from ..llvm.intrinsics import function
from ..llvm.types import HALF, I16, I32, I64, from_storage, storage_type
from .nvvm import SHARED_PTR

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

LDMATRIX_ALIGN = 16  # bytes: where each 8-element row ldmatrix reads must start
# lane parts: g = lane // 4, t = lane % 4, r = lane % 8, (lane >> 3) & 1, (lane >> 4) & 1
_PARTS = ("group", "pair", "row", "bit3", "bit4")
_VARS = tuple(Var(f"lane.{name}", "int32", "loop") for name in _PARTS)
_G, _T, _R, _B3, _B4 = _VARS
_W = Var("lane.warp", "int32", "loop")  # a thread's warp in its warpgroup: threadIdx.y
Affine = tuple[int, int, int]  # constant, coefficient of g, coefficient of t


@dataclass(frozen=True)
class LaneIndex:
    """The parts of a thread's lane (`_PARTS`) as i64 values, computed once per kernel, and
    for a kernel with warpgroups its warp in the group (threadIdx.y, 4 of them)."""

    values: tuple[ir.Value, ...]
    warp: ir.Value | None = None


def lane_index(b: ir.IRBuilder, lane: ir.Value, warp: ir.Value | None = None) -> LaneIndex:
    """The parts of `lane` (an i64 in [0, 32): ``threadIdx.x`` in a 32-wide block), and the
    thread's `warp` in its warpgroup where there are warpgroups."""
    parts = (
        b.lshr(lane, ir.Constant(I64, 2)),
        b.and_(lane, ir.Constant(I64, 3)),
        b.and_(lane, ir.Constant(I64, 7)),
        b.and_(b.lshr(lane, ir.Constant(I64, 3)), ir.Constant(I64, 1)),
        b.and_(b.lshr(lane, ir.Constant(I64, 4)), ir.Constant(I64, 1)),
    )
    return LaneIndex(parts, warp)


@contextmanager
def _lane_bound(em: StmtEmitter, lane: LaneIndex) -> Iterator[None]:
    bound = list(zip(_VARS, lane.values))
    if lane.warp is not None:
        bound.append((_W, lane.warp))
    for var, value in bound:
        em.bind(var, value, index=True)
        em.nonnegative.add(var)
    try:
        yield
    finally:
        for var, _ in bound:
            em.vars.pop(var, None)
            em.nonnegative.discard(var)


# -- layouts ---------------------------------------------------------------------------------


@cache
def _affine(scope: str, shape: tuple[int, int]) -> tuple[tuple[Affine, Affine], ...]:
    """Per slot, its (row, column) in the tile as `Affine` functions of the lane's g and t
    (for a warpgroup's tile, in the 16 rows of the lane's warp: `_warp_rows`)."""
    if scope == "wgmma.accumulator":
        table = fragments.warp_slice(shape[1])
    else:
        table = fragments.layout(scope, shape)
    found = []
    for slot in range(len(table[0])):
        (r0, c0), (r4, c4), (r1, c1) = table[0][slot], table[4][slot], table[1][slot]
        row, col = (r0, r4 - r0, r1 - r0), (c0, c4 - c0, c1 - c0)
        for lane, held in enumerate(table):
            g, t = lane // 4, lane % 4
            if held[slot] != (_at(row, g, t), _at(col, g, t)):
                raise InternalError(f"the {scope} layout is not affine in the lane")
        found.append((row, col))
    return tuple(found)


def _at(f: Affine, g: int, t: int) -> int:
    return f[0] + f[1] * g + f[2] * t


@cache
def pair_axis(scope: str, shape: tuple[int, int]) -> int | None:
    """The tile axis (0: rows, 1: columns) along which slots ``2j`` and ``2j + 1`` are
    neighbours (the two halves of one register), or None where they are not (TF32 operands,
    one element a register)."""
    table = fragments.layout(scope, shape)
    axes = set()
    for held in table:
        for k in range(0, len(held), 2):
            dr, dc = held[k + 1][0] - held[k][0], held[k + 1][1] - held[k][1]
            axes.add(1 if (dr, dc) == (0, 1) else 0 if (dr, dc) == (1, 0) else None)
    return axes.pop() if len(axes) == 1 else None


@dataclass(frozen=True)
class LdmatrixPlan:
    """How one ``ldmatrix`` loads a fragment tile: `count` matrices, transposed or not; lane
    ``l`` addresses row ``l % 8`` of matrix ``(l // 8) % count``, the tile element
    `origin` (as (row, column) in ``((l >> 3) & 1, (l >> 4) & 1)``: constant and the two
    coefficients) plus ``l % 8`` along the tile axis `step_axis`."""

    count: int
    trans: bool
    origin: tuple[Affine, Affine]
    step_axis: int


@cache
def ldmatrix_plan(
    scope: str, shape: tuple[int, int], contiguous_axis: int, per_register: int = 2
) -> LdmatrixPlan | None:
    """The `LdmatrixPlan` for a fragment tile whose memory rows run along tile axis
    `contiguous_axis` (0: a tile column is contiguous, 1: a tile row is), with `per_register`
    elements to a 32-bit register (2 for 16-bit data; 1 for TF32's float32, which ldmatrix
    moves as pairs of 16-bit halves: lane ``l`` gets the float at row ``l // 4``, column
    ``l % 4`` of an 8 x 4 matrix, TF32's own layout, but never transposed). None where
    ldmatrix cannot load it."""
    table = fragments.layout(scope, shape)
    count = len(table[0]) // per_register
    corners = [table[0][per_register * p] for p in range(count)]  # lane 0's first slot of p
    if count not in (2, 4):
        return None
    o0 = corners[0]
    d3 = _minus(corners[1], o0)
    d4 = _minus(corners[2], o0) if count > 2 else (0, 0)
    if count == 4 and corners[3] != (o0[0] + d3[0] + d4[0], o0[1] + d3[1] + d4[1]):
        raise InternalError(f"the {scope} tiles are not a 2 x 2 grid of 8 x 8 matrices")
    origin = ((o0[0], d3[0], d4[0]), (o0[1], d3[1], d4[1]))
    if per_register == 1:
        moved = _minus(table[1][0], table[0][0])  # lane 1 is lane 0's neighbour along t
        if moved != ((0, 1) if contiguous_axis == 1 else (1, 0)):
            return None  # the floats of a lane's 16 bytes would run across the tile
        return LdmatrixPlan(count, False, origin, 1 - contiguous_axis)
    trans = contiguous_axis != pair_axis(scope, shape)
    return LdmatrixPlan(count, trans, origin, 1 - contiguous_axis)


def _minus(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return (a[0] - b[0], a[1] - b[1])


def contiguous_dim(buffer: Buffer) -> int | None:
    """The dimension of `buffer` whose neighbours are adjacent in memory (stride 1)."""
    if buffer.strides is None:
        return len(buffer.shape) - 1 if buffer.shape else None
    for d, stride in enumerate(buffer.strides):
        if isinstance(stride, Const) and dt.is_int(stride.dtype) and int(stride.value) == 1:
            return d
    return None


# -- index expressions -----------------------------------------------------------------------


def _linear(k: int, terms: tuple[tuple[int, Var], ...], dtype: str) -> Expr:
    """``k + sum(coefficient * var)``, as small as the coefficients allow."""
    total: Expr | None = None
    for coefficient, var in terms:
        if coefficient == 0:
            continue
        term: Expr = var if coefficient == 1 else Binary("*", const(coefficient, dtype), var, dtype)
        total = term if total is None else Binary("+", total, term, dtype)
    if total is None:
        return const(k, dtype)
    return total if k == 0 else Binary("+", total, const(k, dtype), dtype)


def _shifted(t: Tile, row: tuple[int, tuple], col: tuple[int, tuple]) -> tuple[Expr, ...]:
    """The indices of the element of tile `t` at (row, col), each ``(k, terms)`` of `_linear`."""
    indices = list(t.base)
    for d, (k, terms) in zip(t.dims, (row, col)):
        base = indices[d]
        offset = _linear(k, terms, base.dtype)
        if isinstance(offset, Const) and int(offset.value) == 0:
            continue
        indices[d] = Binary("+", base, offset, base.dtype)
    return tuple(indices)


def _slot_indices(t: Tile, position: tuple[Affine, Affine]) -> tuple[Expr, ...]:
    """The indices of the element of `t` that a lane holds at `position` (`_affine`)."""
    row, col = position
    return _shifted(
        t,
        (row[0], ((row[1], _G), (row[2], _T))),
        (col[0], ((col[1], _G), (col[2], _T))),
    )


def _in_memory(em: StmtEmitter, t: Tile) -> None:
    if t.buffer in em.registers.values:
        raise InternalError(f"'{t.buffer.name}' is in registers but a lane indexes it")


# -- load ------------------------------------------------------------------------------------


def load_fragment(em: StmtEmitter, dst: Tile, src: Tile, lane: LaneIndex) -> list[ir.Value]:
    """The slots of fragment tile `dst` (storage values) loaded from the memory tile `src`."""
    _in_memory(em, src)
    scope, shape = dst.buffer.scope, tuple(dst.shape)
    wide_b = scope == "wmma.matrix_b" and shape[1] == 32
    if shape[0] == fragments.M_STACKED or wide_b:  # two tiles of 16, one's slots after the other's
        return [v for half in _halves(dst, src) for v in load_fragment(em, *half, lane)]
    with _lane_bound(em, lane):
        found = _ldmatrix(em, dst, src) if scope != "wmma.accumulator" else None
        if found is not None:
            return found
        return _per_lane(em, src, scope, shape)


def _halves(dst: Tile, src: Tile) -> list[tuple[Tile, Tile]]:
    """The 16-row (or, of B's 16 x 32, 16-column) tiles of fragment tile `dst` and of the
    memory tile `src` it is loaded from, first half first: the slots of the first half come
    first (`fragments`)."""
    axis = 0 if dst.shape[0] == fragments.M_STACKED else 1
    shape = list(src.shape)
    shape[axis] //= 2
    halves = []
    for start in (0, shape[axis]):
        base = list(src.base)
        at = base[src.dims[axis]]
        if start:
            base[src.dims[axis]] = Binary("+", at, const(start, at.dtype), at.dtype)
        halves.append(
            (replace(dst, shape=tuple(shape)), replace(src, base=tuple(base), shape=tuple(shape)))
        )
    return halves


def _ldmatrix(em: StmtEmitter, dst: Tile, src: Tile) -> list[ir.Value] | None:
    """`ldmatrix`'s registers unpacked into the slots, or None where it cannot be used."""
    buffer = src.buffer
    contiguous = contiguous_dim(buffer)
    size = dt.itemsize(buffer.dtype)
    if buffer.scope != "shared" or contiguous not in src.dims or size not in (2, 4):
        return None
    axis = src.dims.index(contiguous)
    plan = ldmatrix_plan(dst.buffer.scope, tuple(dst.shape), axis, 4 // size)
    if plan is None:
        return None
    row, col = plan.origin
    along = [(row[0], ((row[1], _B3), (row[2], _B4))), (col[0], ((col[1], _B3), (col[2], _B4)))]
    k, terms = along[plan.step_axis]
    along[plan.step_axis] = (k, (*terms, (1, _R)))
    indices = _shifted(src, along[0], along[1])
    if em.align(buffer, indices) < LDMATRIX_ALIGN:
        return None
    b = em.b
    address = em.element(buffer, indices)
    if address.type != SHARED_PTR:
        address = b.addrspacecast(address, SHARED_PTR)
    name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{plan.count}"
    name += ".trans.b16.p3" if plan.trans else ".b16.p3"
    result_t = ir.LiteralStructType([I32] * plan.count)
    loaded = b.call(function(b.module, name, result_t, [SHARED_PTR]), [address])
    values: list[ir.Value] = []
    for p in range(plan.count):
        register = b.extract_value(loaded, p)
        if size == 4:  # one float32 a register
            values.append(b.bitcast(register, storage_type(buffer.dtype)))
        else:
            values.extend(unpack_b16(b, register, buffer.dtype))
    return values


def _per_lane(em: StmtEmitter, src: Tile, scope: str, shape: tuple[int, int]) -> list[ir.Value]:
    """Each lane loads its own slots' elements, a pair at a time where it can."""
    buffer, b = src.buffer, em.b
    typ = storage_type(buffer.dtype)
    axis = pair_axis(scope, shape)
    paired = axis is not None and contiguous_dim(buffer) == src.dims[axis]
    values: list[ir.Value] = []
    positions = _affine(scope, shape)
    for k in range(0, len(positions), 2):
        first = _slot_indices(src, positions[k])
        align = em.align(buffer, first)
        if paired and align >= 2 * dt.itemsize(buffer.dtype):
            vector_t = ir.VectorType(typ, 2)
            pair = b.load(em.element(buffer, first), typ=vector_t, align=align)
            values.extend(b.extract_element(pair, ir.Constant(I32, j)) for j in range(2))
            continue
        for slot in (k, k + 1):
            indices = _slot_indices(src, positions[slot])
            ptr = em.element(buffer, indices)
            values.append(b.load(ptr, typ=typ, align=em.align(buffer, indices)))
    return values


def unpack_b16(b: ir.IRBuilder, register: ir.Value, dtype: str) -> list[ir.Value]:
    """The two 16-bit elements of an ``i32`` register, low half first, in `dtype`'s storage
    type (``half`` for float16, ``i16`` for bfloat16)."""
    if dtype == "float16":
        pair = b.bitcast(register, ir.VectorType(HALF, 2))
        return [b.extract_element(pair, ir.Constant(I32, k)) for k in range(2)]
    low = b.trunc(register, I16)
    high = b.trunc(b.lshr(register, ir.Constant(I32, 16)), I16)
    return [low, high]


# -- store -----------------------------------------------------------------------------------


def store_fragment(
    em: StmtEmitter,
    dst: Tile,
    src: Tile,
    values: list[ir.Value],
    lane: LaneIndex,
    clipped: bool = False,
) -> None:
    """Store the accumulator slots `values` (of fragment tile `src`) to the memory tile `dst`,
    converted to its dtype; neighbouring columns as one access where proven aligned. With
    `clipped`, each element only where it lies inside `dst`'s shape (a tile cut by the edge
    of the tensor): a warp whose rows of the tile lie wholly inside stores them as if not
    clipped (most warps of a large tensor, whose guard per element would cost them)."""
    _in_memory(em, dst)
    dst = _warp_rows(dst, src)
    with _lane_bound(em, lane):
        if not clipped:
            _store_whole(em, dst, src, values)
            return
        rows = 16 if src.buffer.scope == "wgmma.accumulator" else src.shape[0]  # the warp's
        inside = []
        for d, n in zip(dst.dims, (rows, src.shape[1])):
            end = Binary("+", dst.base[d], const(n, dst.base[d].dtype), dst.base[d].dtype)
            inside.append(Compare("<=", end, dst.buffer.shape[d]))
        whole = em.condition(Binary("and", inside[0], inside[1], "bool"))
        with em.b.if_else(whole) as (then, otherwise):
            with then:
                _store_whole(em, dst, src, values)
            with otherwise:
                _store_clipped(em, dst, src, values)


def _store_whole(em: StmtEmitter, dst: Tile, src: Tile, values: list[ir.Value]) -> None:
    """The stores of `store_fragment` (the lane's indices bound)."""
    buffer, b = dst.buffer, em.b
    source, target = src.buffer.dtype, buffer.dtype
    converted = [_convert(em, v, source, target) for v in values]
    scope, shape = src.buffer.scope, tuple(src.shape)
    paired = contiguous_dim(buffer) == dst.dims[pair_axis(scope, shape)]
    positions = _affine(scope, shape)
    typ = storage_type(target)
    for k in range(0, len(positions), 2):
        first = _slot_indices(dst, positions[k])
        align = em.align(buffer, first)
        if paired and align >= 2 * dt.itemsize(target):
            pair = ir.Constant(ir.VectorType(typ, 2), ir.Undefined)
            for j in range(2):
                pair = b.insert_element(pair, converted[k + j], ir.Constant(I32, j))
            b.store(pair, em.element(buffer, first), align=align)
            continue
        for slot in (k, k + 1):
            indices = _slot_indices(dst, positions[slot])
            b.store(converted[slot], em.element(buffer, indices), align=em.align(buffer, indices))


def _warp_rows(dst: Tile, src: Tile) -> Tile:
    """`dst`, for a warpgroup's accumulator tile, moved to the 16 rows the thread's warp holds."""
    if src.buffer.scope != "wgmma.accumulator":
        return dst
    base = list(dst.base)
    row = base[dst.dims[0]]
    base[dst.dims[0]] = Binary(
        "+", row, Binary("*", const(16, row.dtype), _cast(_W, row.dtype), row.dtype), row.dtype
    )
    return Tile(dst.buffer, tuple(base), dst.dims, dst.shape)


def _cast(var: Var, dtype: str) -> Expr:
    return var if var.dtype == dtype else Cast(var, dtype)


def _store_clipped(em: StmtEmitter, dst: Tile, src: Tile, values: list[ir.Value]) -> None:
    """The stores of `store_fragment`, each under its own bounds check (the lane's indices
    bound)."""
    buffer, b = dst.buffer, em.b
    source, target = src.buffer.dtype, buffer.dtype
    positions = _affine(src.buffer.scope, tuple(src.shape))
    for slot, value in enumerate(values):
        indices = _slot_indices(dst, positions[slot])
        inside = [Compare("<", indices[d], buffer.shape[d]) for d in dst.dims]
        cond = Binary("and", inside[0], inside[1], "bool")
        with em.when(em.condition(cond)):
            converted = _convert(em, value, source, target)
            b.store(converted, em.element(buffer, indices), align=em.align(buffer, indices))


def _convert(em: StmtEmitter, value: ir.Value, source: str, target: str) -> ir.Value:
    """A storage value of `source` as `target`'s storage value, converted as the reference
    converts (float32 to 16 bits rounds to nearest even)."""
    if source == target:
        return value
    computed = from_storage(em.b, source, value)
    if dt.is_float(source) and dt.is_int(target):
        converted = em.target.float_to_int(em.b, computed, target)
    else:
        converted = arith.cast(em.b, computed, source, target)
    return em.target.to_storage(em.b, target, converted)
