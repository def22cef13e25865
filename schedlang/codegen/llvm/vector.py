"""Vectorized loops: the body runs once, with the loop variable a vector of lanes.

`lanes.why_scalar` decides whether a loop can; if not, it runs as a scalar loop, with a
`SchedlangWarning` saying why. Memory
accesses are classified by `lanes.access_kind`: uniform ones are scalar loads and stores,
contiguous ones vector loads and stores, the rest lane by lane. A guard that varies across lanes
becomes a mask: when every lane passes (the common case: all but the last tile) the guarded code
runs unmasked, else with masked loads and stores, so tails are exact. A store of
``B[u] = B[u] op term`` to a uniform element is a reduction over the lanes (the one place where
the schedule asked for the additions to be reordered).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import warn
from ...ir import dtype as dt
from ...loopir.core.nodes import For, If, Let, Load, Seq, Stmt, Store
from ...loopir.core.visit import walk_stmt
from .alignment import factor
from .arith import min_max
from .control import if_else, if_then, phi_of
from .expr import Binding
from .intrinsics import intrinsic
from .lanes import access_kind, reduction, why_scalar
from .register_values import read_elements, write_vector
from .types import (
    I1,
    I32,
    I64,
    NARROW_FLOATS,
    constant,
    from_storage,
    round_half,
    storage_type,
)

if TYPE_CHECKING:
    from .expr import ExprEmitter
    from .stmt import StmtEmitter


def _gpu_lanes(loop: For) -> bool:
    """Whether the loop's body holds only loops bound to GPU indices or virtual threads: the
    GPU lowering moves thread loops innermost, so a vectorized loop around them is usual, and
    what each thread runs of it is straight-line code whose adjacent accesses LLVM's
    load/store vectorizer merges (the GEMM's 4-wide stores of C come out as ``st.global.v4``)."""
    inner = [s for s in walk_stmt(loop.body) if isinstance(s, For)]
    return bool(inner) and all(s.thread is not None for s in inner)


def emit_vectorized(em: StmtEmitter, loop: For) -> None:
    reason = why_scalar(loop)
    if reason is not None:
        if not _gpu_lanes(loop):
            warn(
                f"loop {loop.var.name} is vectorized, but {reason}, so it runs as a scalar "
                "loop (same results); vectorize an innermost loop of constant extent (reorder "
                "or split first)"
            )
        em.serial_loop(loop)
        return
    lanes = int(loop.extent.value)
    base = em.index(loop.min)
    steps = ir.Constant(ir.VectorType(I64, lanes), [ir.Constant(I64, k) for k in range(lanes)])
    vector = em.b.add(em.splat(base, lanes), steps, flags=("nsw",))
    saved = (em.lane, em.lanes, em.mask, em.lane_base)
    em.lane, em.lanes, em.mask, em.lane_base = loop.var, lanes, None, base
    em.bind_loop(loop, vector)
    em.known_factors[loop.var] = factor(loop.min, em.known_factors)  # its value at lane 0
    try:
        _stmt(em, loop.body)
    finally:
        em.lane, em.lanes, em.mask, em.lane_base = saved
        del em.vars[loop.var], em.known_factors[loop.var]


def _stmt(em: StmtEmitter, s: Stmt) -> None:
    if isinstance(s, Seq):
        for child in s.stmts:
            _stmt(em, child)
    elif isinstance(s, Let):
        em.bind(s.var, em.value(s.value), index=False)
        _stmt(em, s.body)
        del em.vars[s.var]
    elif isinstance(s, If):
        _if(em, s)
    elif isinstance(s, Store):
        _store(em, s)


def _if(em: StmtEmitter, s: If) -> None:
    cond = em.condition(s.cond)
    if not isinstance(cond.type, ir.VectorType):
        if s.otherwise is None:
            with if_then(em.b, cond, "vif"):
                _stmt(em, s.then)
            return
        with if_else(em.b, cond, "vif") as (then, otherwise):
            with then:
                _stmt(em, s.then)
            with otherwise:
                _stmt(em, s.otherwise)
        return
    arms = [(s.then, cond)]
    if s.otherwise is not None:
        arms.append((s.otherwise, em.b.not_(cond)))
    for body, active in arms:
        if em.mask is None:
            with if_else(em.b, _reduce_bool(em.b, "and", active), "lanes") as (full, part):
                with full:
                    _stmt(em, body)
                with part, if_then(em.b, _reduce_bool(em.b, "or", active), "some"):
                    with em.masked(active):
                        _stmt(em, body)
        else:
            narrowed = em.b.and_(em.mask, active)
            with if_then(em.b, _reduce_bool(em.b, "or", narrowed), "some"):
                with em.masked(active):
                    _stmt(em, body)


def _reduce_bool(b: ir.IRBuilder, op: str, mask: ir.Value) -> ir.Value:
    fn = intrinsic(b.module, f"llvm.vector.reduce.{op}", [mask.type], I1, [mask.type])
    return b.call(fn, [mask])


@contextmanager
def _any_lane(em: ExprEmitter) -> Iterator[None]:
    """The block runs when some lane is active (always, outside masks)."""
    if em.mask is None:
        yield
        return
    with if_then(em.b, _reduce_bool(em.b, "or", em.mask), "some"):
        yield


@contextmanager
def _lane_zero(em: ExprEmitter) -> Iterator[None]:
    """Scalar code for lane 0: the base address of a contiguous access."""
    saved = em.vars[em.lane], em.lanes, em.mask
    em.vars[em.lane] = Binding(em.lane_base, True)
    em.lanes, em.mask = None, None
    try:
        yield
    finally:
        em.vars[em.lane], em.lanes, em.mask = saved


def _kind(em: ExprEmitter, buffer, indices) -> str:
    """`access_kind`, where a contiguous run of a swizzled buffer must stay in one aligned
    16-byte chunk (the chunks of a line are permuted) or is read lane by lane."""
    kind = access_kind(buffer, indices, em.lane, em.lanes)
    if kind == "contiguous" and buffer.swizzle:
        size = dt.itemsize(buffer.dtype) * em.lanes
        if size > 16 or em.align(buffer, indices) < size:
            return "gather"
    return kind


def _store(em: StmtEmitter, s: Store) -> None:
    b, buffer = em.b, s.buffer
    kind = _kind(em, buffer, s.indices)
    if kind == "uniform":
        found = reduction(s, em.lane)
        with _any_lane(em):
            if found is None:
                value = em.value(s.value)
            else:
                value = _reduce(em, s, *found)
            em.scalar_store(buffer, s.indices, value)
        return
    value = em.target.to_storage(b, buffer.dtype, em.splat(em.value(s.value), em.lanes))
    align = dt.itemsize(buffer.dtype)
    registers = em.registers.values.get(buffer)
    if registers is not None:  # contiguous, under no If (`register_values.promoted`)
        write_vector(b, registers, em.register(buffer, s.indices), value)
        return
    if kind == "contiguous":
        align = em.align(buffer, s.indices)
        with _lane_zero(em):
            ptr = em.element(buffer, s.indices)
        if em.mask is None:
            b.store(value, ptr, align=align)
            return
        fn = intrinsic(
            b.module,
            "llvm.masked.store",
            [value.type, ptr.type],
            ir.VoidType(),
            [value.type, ptr.type, I32, em.mask.type],
        )
        b.call(fn, [value, ptr, ir.Constant(I32, align), em.mask])
        return
    offsets = em.offset(buffer, s.indices)
    for lane in range(em.lanes):
        at = ir.Constant(I32, lane)
        with _lane_active(em, at):
            ptr = _lane_pointer(em, buffer, offsets, at)
            b.store(b.extract_element(value, at), ptr, align=align)


@contextmanager
def _lane_active(em: ExprEmitter, at: ir.Constant) -> Iterator[None]:
    if em.mask is None:
        yield
        return
    with if_then(em.b, em.b.extract_element(em.mask, at), "lane"):
        yield


def _lane_pointer(em: ExprEmitter, buffer, offsets: ir.Value, at: ir.Constant) -> ir.Value:
    offset = em.b.extract_element(offsets, at)
    etype = storage_type(buffer.dtype)
    return em.b.gep(em.pointer(buffer), [offset], inbounds=True, source_etype=etype)


def vector_load(em: ExprEmitter, e: Load) -> ir.Value:
    """`e` inside a vectorized loop: a scalar if uniform, else a vector. Inactive lanes of the
    current mask read nothing from memory (their values are zero); a register array is read
    whole, as reading it costs nothing and a select under the mask discards those lanes."""
    b, buffer = em.b, e.buffer
    kind = _kind(em, buffer, e.indices)
    etype = storage_type(buffer.dtype)
    align = dt.itemsize(buffer.dtype)
    if kind == "uniform":
        if em.mask is None:
            with _lane_zero(em):  # the index may name the lane (`lane_stride`)
                return em.scalar_load(buffer, e.indices)
        entry = b.block
        with if_then(b, _reduce_bool(b, "or", em.mask), "some"):
            with _lane_zero(em):
                loaded = em.scalar_load(buffer, e.indices)
            inside = b.block
        zero = constant(buffer.dtype, 0)
        return phi_of(b, [(zero, entry), (loaded, inside)])
    registers = em.registers.values.get(buffer)
    if registers is not None:  # contiguous (`register_values.promoted`); all lanes read
        first = em.register(buffer, e.indices)
        raw = read_elements(b, registers, list(range(first, first + em.lanes)))
        return from_storage(b, buffer.dtype, raw)
    vector_t = ir.VectorType(etype, em.lanes)
    if kind == "contiguous":
        align = em.align(buffer, e.indices)
        with _lane_zero(em):
            ptr = em.element(buffer, e.indices)
        if em.mask is None:
            raw = b.load(ptr, typ=vector_t, align=align)
        else:
            fn = intrinsic(
                b.module,
                "llvm.masked.load",
                [vector_t, ptr.type],
                vector_t,
                [ptr.type, I32, em.mask.type, vector_t],
            )
            zeros = ir.Constant(vector_t, None)
            raw = b.call(fn, [ptr, ir.Constant(I32, align), em.mask, zeros])
        return from_storage(b, buffer.dtype, raw)
    offsets = em.offset(buffer, e.indices)
    raw = ir.Constant(vector_t, None)
    for lane in range(em.lanes):
        at = ir.Constant(I32, lane)
        before = b.block
        with _lane_active(em, at):
            ptr = _lane_pointer(em, buffer, offsets, at)
            loaded = b.insert_element(raw, b.load(ptr, typ=etype, align=align), at)
            inside = b.block
        raw = loaded if em.mask is None else phi_of(b, [(raw, before), (loaded, inside)])
    return from_storage(b, buffer.dtype, raw)


_IDENTITY_FLOAT = {"+": -0.0, "*": 1.0, "max": float("-inf"), "min": float("inf")}


def _reduce(em: ExprEmitter, s: Store, op: str, term) -> ir.Value:
    """``B[u] op (term over the active lanes)``; float sums and products may be reordered."""
    b, dtype = em.b, s.value.dtype
    terms = em.splat(em.value(term), em.lanes)
    if em.mask is not None:
        terms = b.select(em.mask, terms, _identity(op, dtype, em.lanes))
    old = em.scalar_load(s.buffer, s.indices)
    vector_t = terms.type
    scalar_t = vector_t.element
    if dtype in NARROW_FLOATS and op in ("+", "*"):
        combine = b.fadd if op == "+" else b.fmul
        tree = _halving_tree(b, combine, terms, op, dtype)
        return em.target.round_half(b, dtype, combine(old, tree))
    if dt.is_float(dtype) and op in ("+", "*"):
        name = "llvm.vector.reduce.fadd" if op == "+" else "llvm.vector.reduce.fmul"
        fn = intrinsic(b.module, name, [vector_t], scalar_t, [scalar_t, vector_t])
        result = b.call(fn, [old, terms], fastmath=("reassoc",))
        return em.target.round_half(b, dtype, result)
    if dt.is_float(dtype):
        name = "llvm.vector.reduce.fmaximum" if op == "max" else "llvm.vector.reduce.fminimum"
    elif dtype == "bool":
        name = "llvm.vector.reduce.or" if op == "max" else "llvm.vector.reduce.and"
    elif op in ("min", "max"):
        sign = "s" if dtype in dt.SIGNED else "u"
        name = f"llvm.vector.reduce.{sign}{op}"
    else:
        name = "llvm.vector.reduce.add" if op == "+" else "llvm.vector.reduce.mul"
    fn = intrinsic(b.module, name, [vector_t], scalar_t, [vector_t])
    combined = b.call(fn, [terms])
    if op in ("min", "max"):
        return min_max(b, op, old, combined, dtype)
    return b.add(old, combined) if op == "+" else b.mul(old, combined)


def _halving_tree(b: ir.IRBuilder, combine, terms: ir.Value, op: str, dtype: str) -> ir.Value:
    """The lanes of `terms` combined pairwise, halves against halves, rounding every partial
    result to the 16- or 8-bit `dtype`: the reduction accumulates in its dtype in whatever order
    the schedule chose, where LLVM's ``llvm.vector.reduce.fadd`` would keep float partial sums.
    A lane count that is no power of two is padded with the identity."""
    count = terms.type.count
    width = 1 << (count - 1).bit_length()
    if width != count:
        padding = _identity(op, dtype, count)
        terms = b.shuffle_vector(
            terms, padding, _lanes([*range(count), *[count] * (width - count)])
        )
    while width > 1:
        width //= 2
        low = b.shuffle_vector(terms, terms, _lanes(range(width)))
        high = b.shuffle_vector(terms, terms, _lanes(range(width, 2 * width)))
        terms = round_half(b, dtype, combine(low, high))
    return b.extract_element(terms, ir.Constant(I32, 0))


def _lanes(indices) -> ir.Constant:
    """A shuffle mask selecting `indices`."""
    items = [ir.Constant(I32, i) for i in indices]
    return ir.Constant(ir.VectorType(I32, len(items)), items)


def _identity(op: str, dtype: str, lanes: int) -> ir.Constant:
    if dt.is_float(dtype):
        return constant(dtype, _IDENTITY_FLOAT[op], lanes)
    if op == "+":
        return constant(dtype, 0, lanes)
    if op == "*":
        return constant(dtype, 1, lanes)
    value = dt.min_value(dtype) if op == "max" else dt.max_value(dtype)
    return constant(dtype, value, lanes)
