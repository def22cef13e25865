"""Tensor-core statements (`MatrixOp`) on NVPTX: ``mma.sync.aligned.m16n8k16`` on fragments.

A fragment buffer (`FRAGMENT_SCOPES`) is, per thread, the `fragments.lane_size` elements its
lane holds, in `fragments.layout`'s order, tile after tile (`fragments.tile_offset`). Where
every tile base is a compile-time constant (the loops around the ops unrolled), that storage
is SSA values (`register_values`), which is what the hardware wants: ``mma.sync`` reads and
writes registers, and a fragment in a stack array would be a local-memory round trip per op.
Otherwise it is a stack array indexed at run time, correct but slow.

The op itself is the PTX ISA's: the fragment layouts are the ones ``mma.m16n8k16`` reads, so an
op is packing slot pairs ``(2j, 2j + 1)`` into the 32-bit registers the intrinsic takes (two
16-bit operands each; accumulators one float each, or two halves) and unpacking the result.
A 16 x 16 accumulator is two m16n8k16 products, one per 8-column half (slots ``4h .. 4h + 3``
of B and C); a 32 x 8 one (m32n8k16) two as well, one per 16-row half of A and C (its slots
are the two halves' one after the other); an 8 x 32 one (m8n32k16) four, of A's rows and 8
rows of zeros, whose results there are dropped. Loads and stores between fragments and memory are
`matrix_memory`'s.

Every lane of the warp runs an op together (``.sync.aligned``): `nvptx.plan` has checked that
the block is 32 threads wide, that no op stands under a loop bound to ``threadIdx.x``, and
`nvptx.uniform` never narrows one to a single thread.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import InternalError, LoweringError
from ...ir.expr import Const
from ...ir.printer import expr_str
from ...loopir.core.nodes import FRAGMENT_SCOPES, MatrixOp, Tile
from ...loopir.memory import fragments
from ...loopir.memory.fragments import ACCUMULATORS, DTYPES, is_wgmma
from ..llvm import arith
from ..llvm.intrinsics import function
from ..llvm.types import F32, HALF, I32, storage_type, to_storage
from .matrix_memory import LaneIndex, load_fragment, store_fragment
from .wgmma import emit_wgmma, register_pairs

if TYPE_CHECKING:
    from ..llvm.stmt import StmtEmitter

_MEMORY = ("global", "shared", "local")
_SOURCES = {"fill": 0, "load": 1, "mma": 2, "store": 1}
_V2HALF = ir.VectorType(HALF, 2)


def emit_matrix_op(
    em: StmtEmitter,
    s: MatrixOp,
    lane: LaneIndex,
    made: dict[tuple, list[ir.Value]],
) -> None:
    """Emit `s` for the thread whose lane parts are `lane` (every lane of the warp runs it);
    `made` holds A operands' registers made before the run's fence (`operand_registers`)."""
    check_matrix_op(s)
    if s.op == "fill":
        value = em.value(s.value)
        dtype = s.dst.buffer.dtype
        value = to_storage(em.b, dtype, arith.cast(em.b, value, s.value.dtype, dtype))
        write_slots(em, s.dst, [value] * _slots(s.dst))
    elif s.op == "load":
        write_slots(em, s.dst, load_fragment(em, s.dst, s.srcs[0], lane))
    elif is_wgmma(s):
        a = s.srcs[0]
        held = None
        if a.buffer.scope in FRAGMENT_SCOPES:
            held = made.pop(_tile_key(a), None) or register_pairs(em.b, read_slots(em, a))
        write_slots(em, s.dst, emit_wgmma(em, s.dst, *s.srcs, read_slots(em, s.dst), held))
    elif s.op == "mma":
        _mma(em, s.dst, s.srcs[0], s.srcs[1])
    else:
        store_fragment(em, s.dst, s.srcs[0], read_slots(em, s.srcs[0]), lane, s.clipped)


def check_matrix_op(s: MatrixOp) -> None:
    """The structure the loop IR promises (`MatrixOp`'s docstring): an `InternalError` where it
    does not hold, a `LoweringError` for a combination the tensor cores lack."""
    if s.op not in _SOURCES:
        raise InternalError(f"unknown matrix op {s.op!r}")
    if len(s.srcs) != _SOURCES[s.op] or (s.value is not None) != (s.op == "fill"):
        raise InternalError(f"a {s.op} matrix op with {len(s.srcs)} source tile(s)")
    tiles = (s.dst, *s.srcs)
    for t in tiles:
        _check_tile(t)
    fragment = [t.buffer.scope in FRAGMENT_SCOPES for t in tiles]
    expected = {"fill": [True], "load": [True, False], "mma": [True] * 3, "store": [False, True]}
    if s.op == "mma" and s.dst.buffer.scope == "wgmma.accumulator":  # operands read from
        expected["mma"] = [True, fragment[1], False]  # shared memory, A maybe from registers
    if fragment != expected[s.op]:
        scopes = [t.buffer.scope for t in tiles]
        raise InternalError(f"a {s.op} matrix op on tiles of scopes {scopes}")
    if s.op in ("load", "store") and s.dst.shape != s.srcs[0].shape:
        raise InternalError(f"a {s.op} matrix op from a {s.srcs[0].shape} tile to {s.dst.shape}")
    if s.op == "load" and s.dst.buffer.dtype != s.srcs[0].buffer.dtype:
        raise InternalError(f"a matrix load from {s.srcs[0].buffer.dtype} to {s.dst.buffer.dtype}")
    if s.op in ("fill", "store") and (s.dst, *s.srcs)[-1].buffer.scope not in ACCUMULATORS:
        raise InternalError(f"a matrix store from the {s.srcs[0].buffer.scope} fragment")
    if is_wgmma(s):
        a, b = s.srcs
        if a.buffer.scope not in ("shared", "wgmma.accumulator") or b.buffer.scope != "shared":
            raise InternalError("a wgmma reads B from shared memory, A from there or registers")
    elif s.op == "mma":
        _check_mma(*tiles)


def _check_tile(t: Tile) -> None:
    buffer = t.buffer
    ndim = len(buffer.shape)
    if len(t.base) != ndim or sorted(t.dims) != sorted(set(t.dims)) or len(t.dims) != 2:
        raise InternalError(f"a tile of '{buffer.name}' with base {t.base} and dims {t.dims}")
    if not all(0 <= d < ndim for d in t.dims):
        raise InternalError(f"a tile of '{buffer.name}' along dims {t.dims}")
    if buffer.scope in FRAGMENT_SCOPES:
        fragments.slots(buffer.scope, tuple(t.shape))  # raises for a shape the scope lacks
        if tuple(t.dims) != (ndim - 2, ndim - 1):
            raise InternalError(f"a tile of fragment '{buffer.name}' along dims {t.dims}")
        if buffer.dtype not in DTYPES[buffer.scope]:
            raise LoweringError(
                f"fragment '{buffer.name}' ({buffer.scope}) is {buffer.dtype}; the tensor cores "
                f"take {' or '.join(DTYPES[buffer.scope])}"
            )
    elif buffer.scope not in _MEMORY:
        raise InternalError(f"buffer '{buffer.name}' has the unknown scope {buffer.scope!r}")


def _check_mma(c: Tile, a: Tile, b: Tile) -> None:
    scopes = (c.buffer.scope, a.buffer.scope, b.buffer.scope)
    if scopes != ("wmma.accumulator", "wmma.matrix_a", "wmma.matrix_b"):
        raise InternalError(f"an mma on fragments of scopes {scopes}")
    if a.buffer.dtype != b.buffer.dtype or b.shape[1] != c.shape[1] or a.shape[0] != c.shape[0]:
        raise InternalError(
            f"an mma of {a.buffer.dtype} {a.shape} @ {b.buffer.dtype} {b.shape} into {c.shape}"
        )
    if a.buffer.dtype == "float32" and (a.shape[1], b.shape[0]) != (8, 8):
        raise InternalError(f"a TF32 mma of {a.shape} @ {b.shape} tiles (m16n8k8 takes k = 8)")
    if a.buffer.dtype in ("bfloat16", "float32") and c.buffer.dtype != "float32":
        raise LoweringError(
            f"mma_sync of {a.buffer.dtype} operands into the {c.buffer.dtype} accumulator "
            f"'{c.buffer.name}': the tensor cores accumulate {a.buffer.dtype} products only "
            "in float32"
        )


# -- fragment storage -----------------------------------------------------------------------


def _slots(t: Tile) -> int:
    return fragments.slots(t.buffer.scope, tuple(t.shape))


def _storage(em: StmtEmitter, t: Tile) -> tuple[list[ir.Value] | None, ir.Value]:
    """The register array of `t`'s fragment (None when it is in memory) and the i64 index of
    the tile's slot 0 in it."""
    offset = em.index(fragments.tile_offset(t.buffer, tuple(t.shape), tuple(t.base)))
    values = em.registers.values.get(t.buffer)
    if values is not None and not isinstance(offset, ir.Constant):
        raise InternalError(f"fragment '{t.buffer.name}' in registers at a run-time tile")
    return values, offset


def operand_registers(em: StmtEmitter, first: MatrixOp) -> dict[tuple, list[ir.Value]]:
    """Before the fence of a run of products whose first is `first`: where its A operand is a
    fragment in registers, the 32-bit registers of every tile of it along its columns (the
    run's products read them in turn), by tile (`_tile_key`), for `emit_matrix_op` to
    take. Made at the product instead, after the fence, a pair of halves rounded one by one
    (bfloat16 probabilities, a diagonal step's masked ones) is a register written between the
    fence and the product, which ptxas fences again ("warpgroup.arrive is injected", C7519):
    21 products of the causal bfloat16 attention kernel. The backend keeps the IR's order."""
    a = first.srcs[0]
    if a.buffer.scope not in FRAGMENT_SCOPES or not isinstance(a.buffer.shape[-1], Const):
        return {}
    start = a.base[-1]
    made = {}
    for column in range(0, int(a.buffer.shape[-1].value), a.shape[1]):
        tile = replace(a, base=(*a.base[:-1], Const(column, start.dtype)))
        made[_tile_key(tile)] = register_pairs(em.b, read_slots(em, tile))
    return made


def _tile_key(t: Tile) -> tuple:
    """A fragment tile by its buffer and its base as written: the tiles a run's products read
    are the ones `operand_registers` made only where their whole bases match."""
    return id(t.buffer), tuple(expr_str(e) for e in t.base)


def read_slots(em: StmtEmitter, t: Tile) -> list[ir.Value]:
    """The slots of fragment tile `t`, in its dtype's storage type."""
    values, offset = _storage(em, t)
    count = _slots(t)
    if values is not None:
        first = int(offset.constant)
        return values[first : first + count]
    typ = storage_type(t.buffer.dtype)
    return [em.b.load(_slot_pointer(em, t, offset, k), typ=typ) for k in range(count)]


def write_slots(em: StmtEmitter, t: Tile, new: list[ir.Value]) -> None:
    """Set the slots of fragment tile `t` to `new` (storage-type values)."""
    values, offset = _storage(em, t)
    if len(new) != _slots(t):
        raise InternalError(f"{len(new)} values for a {t.shape} tile of '{t.buffer.name}'")
    if values is not None:
        first = int(offset.constant)
        values[first : first + len(new)] = new
        return
    for k, value in enumerate(new):
        em.b.store(value, _slot_pointer(em, t, offset, k))


def _slot_pointer(em: StmtEmitter, t: Tile, offset: ir.Value, k: int) -> ir.Value:
    return em.address(em.pointer(t.buffer), em.index_op("+", offset, em.i64(k)), t.buffer.dtype)


# -- mma.sync --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Variant:
    """One m16n8k16 intrinsic: its name and how its operands and accumulators are typed."""

    name: str
    operand: ir.Type  # one register of two A or B elements
    accumulator: ir.Type  # one register of C/D
    per_register: int  # accumulator elements per register


def _variant(operands: str, accumulator: str) -> _Variant:
    if operands == "float32":  # TF32, one element a register (`_check_mma`: float32 sums)
        return _Variant("llvm.nvvm.mma.m16n8k8.row.col.tf32", I32, F32, 1)
    if operands == "bfloat16":  # (`_check_mma` refused a float16 accumulator)
        return _Variant("llvm.nvvm.mma.m16n8k16.row.col.bf16", I32, F32, 1)
    if accumulator == "float32":
        return _Variant("llvm.nvvm.mma.m16n8k16.row.col.f32.f32", _V2HALF, F32, 1)
    return _Variant("llvm.nvvm.mma.m16n8k16.row.col.f16.f16", _V2HALF, _V2HALF, 2)


def _mma(em: StmtEmitter, c: Tile, a: Tile, b: Tile) -> None:
    """D = A @ B + C, one m16n8k16 product per 8 columns and 16 rows of the accumulator."""
    variant = _variant(a.buffer.dtype, c.buffer.dtype)
    acc = read_slots(em, c)
    tf32 = a.buffer.dtype == "float32"
    registers_of = (
        (lambda xs: [_tf32(em.b, x) for x in xs])
        if tf32
        else (lambda xs: [_pack(em.b, variant.operand, x, y) for x, y in _pairs(xs)])
    )
    short = c.shape[0] == fragments.M_SHORT
    halves = max(c.shape[0] // fragments.M, 1)  # 16-row halves, one after the other in the slots
    a_slots = read_slots(em, a)
    if short:  # the rows g + 8 of 16-row tiles, as zeros
        a_slots = _with_zero_rows(a_slots, a.buffer.dtype)
        acc = _with_zero_rows(acc, c.buffer.dtype)
    a_per_half = len(a_slots) // halves
    b_slots = read_slots(em, b)
    per_block = len(b_slots) // (c.shape[1] // 8)  # B's slots per 8 columns
    registers = 4 // variant.per_register
    result_t = ir.LiteralStructType([variant.accumulator] * registers)
    args = [variant.operand] * ((a_per_half + per_block) // (1 if tf32 else 2))
    args += [variant.accumulator] * registers
    intrinsic = function(em.b.module, variant.name, result_t, args)
    out: list[ir.Value] = []
    for r in range(halves):
        a_regs = registers_of(a_slots[a_per_half * r : a_per_half * (r + 1)])
        for h in range(c.shape[1] // 8):
            b_regs = registers_of(b_slots[per_block * h : per_block * (h + 1)])
            c_part = acc[len(out) : len(out) + 4]
            if variant.per_register == 2:
                c_regs = [_pack(em.b, variant.accumulator, x, y) for x, y in _pairs(c_part)]
            else:
                c_regs = c_part
            d = em.b.call(intrinsic, [*a_regs, *b_regs, *c_regs])
            for k in range(registers):
                reg = em.b.extract_value(d, k)
                out.extend(_unpack(em.b, reg) if variant.per_register == 2 else [reg])
    if short:  # the results in the rows of zeros are dropped
        out = [v for k, v in enumerate(out) if k % 4 < 2]
    write_slots(em, c, out)


def _with_zero_rows(values: list[ir.Value], dtype: str) -> list[ir.Value]:
    """The slots of an 8-row tile (A's or the accumulator's) as those of the 16-row tile it is
    the top of: after each pair of row ``g``, the pair of row ``g + 8``, zeros."""
    typ = storage_type(dtype)
    zero = ir.Constant(typ, 0 if isinstance(typ, ir.IntType) else 0.0)
    out: list[ir.Value] = []
    for k in range(0, len(values), 2):
        out += [values[k], values[k + 1], zero, zero]
    return out


def _tf32(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """A float32 rounded to TF32 (nearest, ties away from zero), as the ``i32`` register
    the TF32 mma takes."""
    convert = ir.FunctionType(I32, [F32])
    return b.asm(convert, "cvt.rna.tf32.f32 $0, $1;", "=r,f", [value], side_effect=False)


def _pairs(values: list[ir.Value]) -> list[tuple[ir.Value, ir.Value]]:
    return [(values[k], values[k + 1]) for k in range(0, len(values), 2)]


def _pack(b: ir.IRBuilder, typ: ir.Type, low: ir.Value, high: ir.Value) -> ir.Value:
    """Two 16-bit storage values as one register of `typ` (``<2 x half>`` or ``i32``), `low`
    in the lower half: the PTX ISA's element order in a packed ``.f16x2``/``.bf16x2``."""
    if isinstance(typ, ir.VectorType):
        vector = ir.Constant(typ, ir.Undefined)
        vector = b.insert_element(vector, low, ir.Constant(I32, 0))
        return b.insert_element(vector, high, ir.Constant(I32, 1))
    return b.or_(b.zext(low, I32), b.shl(b.zext(high, I32), ir.Constant(I32, 16)))


def _unpack(b: ir.IRBuilder, register: ir.Value) -> list[ir.Value]:
    """The two elements of a ``<2 x half>`` register."""
    return [b.extract_element(register, ir.Constant(I32, k)) for k in range(2)]
