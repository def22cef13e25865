"""Loop-IR expressions to LLVM values: the translator every target shares.

Two modes. *Value* mode computes an expression in its dtype with the reference's numerics
(int32 wraps, ``//`` floors, 16-bit floats round after each operation). *Index* mode computes an
integer expression as a 64-bit index with no-signed-wrap arithmetic: loop variables, sizes,
loop bounds, guards and memory offsets are indices, so the optimiser can strength-reduce
addresses and widen nothing. Both agree whenever no int32 operation overflows, which isl's
loop bounds and in-bounds accesses guarantee.

Inside a vectorized loop (`lanes` set) a value is either a scalar (uniform across lanes) or a
vector; operations splat scalars where they meet vectors, and loads go through `llvm.vector`
under the current lane `mask`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from llvmlite import ir

from ...errors import InternalError
from ...ir import dtype as dt
from ...ir.expr import Binary, Call, Cast, Compare, Const, Expr, Select, Unary, Var
from ...ir.printer import expr_str
from ...loopir.core.nodes import FRAGMENT_SCOPES, Buffer, For, Load
from ...loopir.core.visit import walk_expr
from ...loopir.index.nonneg import nonnegative
from . import arith
from .alignment import access_align
from .byte_fields import biased_field
from .control import if_else, phi_of
from .intrinsics import call_overloaded
from .math import call_math
from .register_values import RegisterFile
from .reuse import Reuse
from .target import Target
from .types import (
    F32,
    I16,
    I32,
    I64,
    compute_type,
    constant,
    from_storage,
    is_signed,
    lanes_of,
    splat,
    storage_type,
    vector_of,
)

_FLOAT_ARITH = {"+": "fadd", "-": "fsub", "*": "fmul", "/": "fdiv"}
_INT_ARITH = {"+": "add", "-": "sub", "*": "mul", "&": "and_", "|": "or_", "^": "xor"}
_INDEX_OPS = ("+", "-", "*", "//", "%", "min", "max")
_INDEX_INSTRUCTION = {"+": "add", "-": "sub", "*": "mul"}


@dataclass(frozen=True, slots=True)
class Binding:
    """What a variable stands for: an i64 index (loop variables, sizes) or a value of its
    dtype (``Let``)."""

    value: ir.Value
    index: bool


class ExprEmitter:
    """Expression translation; `llvm.stmt.StmtEmitter` adds statements."""

    def __init__(self, builder: ir.IRBuilder, target: Target) -> None:
        self.b = builder
        self.target = target
        self.vars: dict[Var, Binding] = {}
        self.buffers: dict[Buffer, ir.Value] = {}
        self.lane: Var | None = None
        self.lanes: int | None = None
        self.mask: ir.Value | None = None
        self.known_factors: dict[Var, int] = {}  # `alignment.factor` of vector lane variables
        self.lane_base: ir.Value | None = None  # the lane variable's value at lane 0
        self.nonnegative: set[Var] = set()  # loop variables that start at 0 or above
        self.tables: dict[Var, tuple[range, ir.Value]] = {}  # `register_values.table_loop`s
        self.registers = RegisterFile()
        self._i64: dict[int, ir.Constant] = {}
        self.reuse = Reuse(builder)  # integer arithmetic emitted once where it dominates

    # -- helpers --------------------------------------------------------------------------
    def splat(self, value: ir.Value, lanes: int | None) -> ir.Value:
        """`value` as a vector of `lanes` (unchanged when it already is one, or lanes is None)."""
        if lanes is None or lanes_of(value) == lanes:
            return value
        vector_t = ir.VectorType(value.type, lanes)
        if isinstance(value, ir.Constant):
            return ir.Constant(vector_t, [value] * lanes)
        undef = ir.Constant(vector_t, ir.Undefined)
        first = self.b.insert_element(undef, value, ir.Constant(I32, 0))
        zeros = ir.Constant(ir.VectorType(I32, lanes), [ir.Constant(I32, 0)] * lanes)
        return self.b.shuffle_vector(first, undef, zeros)

    def unify(self, *values: ir.Value) -> list[ir.Value]:
        """`values` splatted to the width of the vectors among them (all of one width)."""
        for v in values:
            if isinstance(v.type, ir.VectorType):
                lanes = v.type.count
                return [self.splat(x, lanes) for x in values]
        return list(values)

    def bind(self, var: Var, value: ir.Value, index: bool) -> None:
        self.vars[var] = Binding(value, index)

    def bind_loop(self, loop: For, value: ir.Value) -> None:
        """`loop`'s variable is the index `value`; never negative when its start is not."""
        self.vars[loop.var] = Binding(value, True)
        if nonnegative(loop.min, self.nonnegative.__contains__):
            self.nonnegative.add(loop.var)
        else:
            self.nonnegative.discard(loop.var)

    def varying(self, e: Expr) -> bool:
        """Whether `e` may differ between lanes (inside a vectorized loop)."""
        if self.lanes is None:
            return False
        return any(isinstance(n, Var) and lanes_of(self._var(n).value) for n in walk_expr(e))

    def _var(self, v: Var) -> Binding:
        binding = self.vars.get(v)
        if binding is None:
            raise InternalError(f"the variable '{v.name}' is used outside its loop or let")
        return binding

    # -- value mode -----------------------------------------------------------------------
    def value(self, e: Expr) -> ir.Value:
        """`e` in its dtype's compute type (a vector when it varies across lanes)."""
        if isinstance(e, Const):
            return constant(e.dtype, e.value)
        if isinstance(e, Var):
            return self._var_value(e)
        if isinstance(e, Load):
            return self.load(e)
        if isinstance(e, Binary):
            return self._binary(e)
        if isinstance(e, Compare):
            return self._compare(e.op, e.a.dtype, *self.unify(self.value(e.a), self.value(e.b)))
        if isinstance(e, Unary):
            return self._unary(e)
        if isinstance(e, Select):
            return self._select(e)
        if isinstance(e, Cast):
            if e.dtype == "bfloat16":
                biased = biased_field(self, e.value, 0x43, 128)
                if biased is not None:
                    return self._less_128(biased)
            value = self.value(e.value)
            if dt.is_float(e.value.dtype) and dt.is_int(e.dtype):
                return self.target.float_to_int(self.b, value, e.dtype)
            if e.dtype == "bfloat16" and e.value.dtype == "float32":  # the target's rounding
                bits = self.target.to_storage(self.b, e.dtype, value)
                return from_storage(self.b, e.dtype, bits)
            if e.dtype == "bfloat16" and dt.is_int(e.value.dtype):
                if arith.masked_below(value, 128):
                    return self._small_to_bfloat16(value)
            return arith.cast(self.b, value, e.value.dtype, e.dtype, self.target.round_half)
        if isinstance(e, Call):
            args = self.unify(*(self.value(a) for a in e.args))
            return call_math(self.b, self.target, e.name, args, e.dtype)
        raise InternalError(f"code generation cannot translate {type(e).__name__} '{e}'")

    def _multiply_add(self, e: Binary) -> ir.Value | None:
        """``a * b + c`` as ``llvm.fmuladd``, which the target may fuse into one instruction
        with a single rounding: C's ``FP_CONTRACT ON`` (clang's default), not fast-math. It
        halves the floating-point work of a dot product's inner loop. Not for 16-bit floats,
        computed in float32 with a rounding after each operation that fusing would skip."""
        for product, other in ((e.a, e.b), (e.b, e.a)):
            if isinstance(product, Binary) and product.op == "*" and product.dtype == e.dtype:
                x, y, z = self.unify(
                    self.value(product.a), self.value(product.b), self.value(other)
                )
                return call_overloaded(self.b, "llvm.fmuladd", [x, y, z])
        return None

    def _small_to_bfloat16(self, value: ir.Value) -> ir.Value:
        """An integer in [0, 128) (an unpacked nibble) as bfloat16 by its bits: ``0x4300 | v``
        is the bfloat16 ``128 + v`` (its unit at 128 is 1), less 128, both exact. One logic
        instruction and a bfloat16 subtraction (two lanes an instruction in a vector) where
        the float32 route takes two a lane, then the upper halves' packing, before the
        dequantising kernel's bfloat16 arithmetic can read them."""
        b, lanes = self.b, lanes_of(value)
        width = (value.type.element if lanes else value.type).width
        bits = value
        if width != 16:
            i16 = vector_of(I16, lanes)
            bits = b.trunc(value, i16) if width > 16 else b.zext(value, i16)
        return self._less_128(b.or_(bits, splat(I16, 0x4300, lanes)))

    def _less_128(self, bits: ir.Value) -> ir.Value:
        """The bfloat16 whose bits are `bits` (``0x4300 | v``), less 128: v."""
        b, lanes = self.b, lanes_of(bits)
        biased = from_storage(b, "bfloat16", bits)
        bias = splat(F32, 128.0, lanes)
        native = self.target.half_arithmetic(b, "-", "bfloat16", biased, bias)
        return native if native is not None else b.fsub(biased, bias)

    def _var_value(self, v: Var) -> ir.Value:
        binding = self._var(v)
        if not binding.index:
            return binding.value
        value = binding.value
        make = lambda: arith.cast(self.b, value, "int64", v.dtype)  # noqa: E731
        return self.reuse.value(("cast", id(value), v.dtype), make, value)

    def _binary(self, e: Binary) -> ir.Value:
        b, dtype, op = self.b, e.dtype, e.op
        if op == "+" and dtype in ("float32", "float64") and self.target.contract:
            fused = self._multiply_add(e)
            if fused is not None:
                return fused
        x, y = self.unify(self.value(e.a), self.value(e.b))
        if not dt.is_float(dtype):
            make = lambda: self._int_binary(e, x, y)  # noqa: E731
            return self.reuse.value(("value " + op, id(x), id(y), dtype), make, x, y)
        if op in ("min", "max"):
            return arith.min_max(b, op, x, y, dtype)
        native = self.target.half_arithmetic(b, op, dtype, x, y)
        if native is not None:
            return native
        if op in _FLOAT_ARITH:
            result = getattr(b, _FLOAT_ARITH[op])(x, y)
        elif op == "//":
            result = arith.float_floordiv(b, x, y)
        elif op == "%":
            result = arith.float_floormod(b, x, y)
        else:
            raise InternalError(f"the operator '{op}' on {dtype} in '{expr_str(e)}'")
        return self.target.round_half(b, dtype, result)

    def _int_binary(self, e: Binary, x: ir.Value, y: ir.Value) -> ir.Value:
        """`e` of integers or booleans over the values `x` and `y` of its operands."""
        b, dtype, op = self.b, e.dtype, e.op
        if op in ("min", "max"):
            return arith.min_max(b, op, x, y, dtype)
        if op in ("and", "or"):
            return b.and_(x, y) if op == "and" else b.or_(x, y)
        if op in _INT_ARITH:
            return getattr(b, _INT_ARITH[op])(x, y)
        if op == "//":
            return arith.int_floordiv(b, x, y, dtype)
        if op == "%":
            return arith.int_floormod(b, x, y, dtype)
        if op in ("<<", ">>"):
            return arith.shift(b, op, x, y, dtype)
        raise InternalError(f"the operator '{op}' on {dtype} in '{expr_str(e)}'")

    def _compare(self, op: str, dtype: str, x: ir.Value, y: ir.Value) -> ir.Value:
        if dt.is_float(dtype):
            if op == "!=":
                return self.b.fcmp_unordered(op, x, y)
            return self.b.fcmp_ordered(op, x, y)
        if is_signed(dtype):
            return self.b.icmp_signed(op, x, y)
        return self.b.icmp_unsigned(op, x, y)

    def _unary(self, e: Unary) -> ir.Value:
        x = self.value(e.a)
        if e.op == "-":
            if dt.is_float(e.dtype):
                return self.b.fneg(x)
            return self.b.sub(arith.splat_like(0, x), x)
        return self.b.xor(x, arith.splat_like(-1, x))

    def _select(self, e: Select) -> ir.Value:
        cond = self.value(e.cond)
        lanes = lanes_of(cond)
        if lanes:
            with self.masked(cond):
                yes = self.value(e.true_value)
            with self.masked(self.b.not_(cond)):
                no = self.value(e.false_value)
            # both sides may be uniform (isl writes ``i // 2 + i`` as a select over i)
            return self.b.select(cond, *self.unify(self.splat(yes, lanes), self.splat(no, lanes)))
        guards = any(isinstance(n, Load) for n in walk_expr(e.true_value)) or any(
            isinstance(n, Load) for n in walk_expr(e.false_value)
        )
        if not guards:
            yes, no = self.unify(self.value(e.true_value), self.value(e.false_value))
            return self.b.select(cond, yes, no)
        incoming = []
        arm = self._select_arm if e.dtype == "bfloat16" else self.value
        with if_else(self.b, cond, "select") as (then, otherwise):
            with then:
                incoming.append((self.splat(arm(e.true_value), self.lanes), self.b.block))
            with otherwise:
                incoming.append((self.splat(arm(e.false_value), self.lanes), self.b.block))
        joined = phi_of(self.b, incoming)
        return joined if e.dtype != "bfloat16" else from_storage(self.b, e.dtype, joined)

    def _select_arm(self, e: Expr) -> ir.Value:
        """A bfloat16 arm of a branching select as its bits, so that the branches join the
        bits: joined as floats, the value stored after was rounded again (the arms' widening
        is integer arithmetic that LLVM does not see through, where it folds float16's
        ``fpext`` and ``fptrunc``)."""
        return self.target.to_storage(self.b, e.dtype, self.value(e))

    @contextmanager
    def masked(self, cond: ir.Value) -> Iterator[None]:
        """Lanes outside `cond` are inactive inside the block (their loads do not happen)."""
        saved = self.mask
        self.mask = cond if saved is None else self.b.and_(saved, cond)
        try:
            yield
        finally:
            self.mask = saved

    # -- memory ---------------------------------------------------------------------------
    def pointer(self, buffer: Buffer) -> ir.Value:
        ptr = self.buffers.get(buffer)
        if ptr is None:
            raise InternalError(f"buffer '{buffer.name}' is used outside its allocation")
        return ptr

    def offset(self, buffer: Buffer, indices: tuple[Expr, ...], xor: bool = True) -> ir.Value:
        """The element offset of `indices` in `buffer` (row-major unless it has strides; a
        swizzled buffer's panels and permuted chunks, the latter left out without `xor`)."""
        if buffer.scope in FRAGMENT_SCOPES and len(indices) == 1:  # a slot of the thread's
            return self.index(indices[0])  # share (`fragments`)
        if len(indices) != len(buffer.shape):
            raise InternalError(
                f"'{buffer.name}' accessed with {len(indices)} indices; it has "
                f"{len(buffer.shape)} dimension(s)"
            )
        if not indices:
            return self.i64(0)
        known = _constant_offset(buffer, indices)
        if known is not None:  # what the general case folds to (local buffers, after unrolling)
            return self.i64(swizzled(buffer, known, xor))
        if buffer.strides is not None:
            terms = [
                self._mul(self.index(i), self.index(s)) for i, s in zip(indices, buffer.strides)
            ]
            total = terms[0]
            for t in terms[1:]:
                total = self.index_op("+", *self.unify(total, t))
            return self._swizzle(buffer, total, xor)
        total = self.index(indices[0])
        for extent, i in zip(buffer.shape[1:], indices[1:]):
            scaled = self._mul(total, self.index(extent))
            total = self.index_op("+", *self.unify(scaled, self.index(i)))
        return self._swizzle(buffer, total, xor)

    def _swizzle(self, buffer: Buffer, offset: ir.Value, xor: bool = True) -> ir.Value:
        """The element offset where a swizzled buffer keeps element `offset` (`Buffer`): in
        its panel, then (with `xor`) its chunk permuted."""
        if not buffer.swizzle:
            return offset
        b, t = self.b, offset.type
        kind = t.element if isinstance(t, ir.VectorType) else t
        count = t.count if isinstance(t, ir.VectorType) else None

        def k(n: int) -> ir.Value:
            scalar = ir.Constant(kind, n)
            return scalar if count is None else ir.Constant(t, [scalar] * count)

        cut = panels(buffer)
        if cut is not None:
            width, rows, panel = cut
            whole = b.mul(b.udiv(offset, k(rows * width)), k(rows * width))
            column = b.urem(offset, k(width))
            row = b.urem(b.udiv(offset, k(width)), k(rows))
            offset = b.add(
                b.add(whole, b.mul(b.udiv(column, k(panel)), k(rows * panel))),
                b.add(b.mul(row, k(panel)), b.urem(column, k(panel))),
            )
        if not xor:
            return offset
        chunk, line, mask = swizzle_bits(buffer)
        term = b.shl(b.and_(b.lshr(offset, k(line)), k(mask)), k(chunk))
        return b.xor(offset, term)

    def _mul(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.index_op("*", *self.unify(x, y))

    def index_op(self, op: str, x: ir.Value, y: ir.Value) -> ir.Value:
        """``x op y`` on indices (+, -, *), folded where an operand is a constant that decides
        it: unrolled loops make most indices constants, and IR that is not emitted is IR that
        LLVM does not have to read and fold (kernels with register tiles compile faster)."""
        cx, cy = _known(x), _known(y)
        if cx is not None and cy is not None:
            value = cx + cy if op == "+" else cx - cy if op == "-" else cx * cy
            return self.i64(value) if x.type is I64 else ir.Constant(x.type, value)
        if op in ("+", "-") and cy == 0:
            return x
        if op == "+" and cx == 0:
            return y
        if op == "*" and (cy == 1 or cx == 0):
            return x
        if op == "*" and (cx == 1 or cy == 0):
            return y
        emit = getattr(self.b, _INDEX_INSTRUCTION[op])
        return self.reuse.value((op, id(x), id(y)), lambda: emit(x, y, flags=("nsw",)), x, y)

    def i64(self, value: int) -> ir.Constant:
        """`value` as an i64 constant, one object per value: index arithmetic makes and folds
        tens of thousands of them in an unrolled kernel, and a shared constant is also
        printed once."""
        found = self._i64.get(value)
        if found is None:
            found = self._i64[value] = ir.Constant(I64, value)
        return found

    def element(self, buffer: Buffer, indices: tuple[Expr, ...]) -> ir.Value:
        """The address of one element (indices uniform, or outside vectorized loops)."""
        return self.address(self.pointer(buffer), self.offset(buffer, indices), buffer.dtype)

    def address(self, base: ir.Value, offset: ir.Value, dtype: str) -> ir.Value:
        """`base` advanced by `offset` elements of `dtype`; a stack slot's element at a
        constant offset is addressed in the entry block, once."""

        def make() -> ir.Value:
            return self.b.gep(base, [offset], inbounds=True, source_etype=storage_type(dtype))

        key = ("gep", id(base), id(offset), dtype)
        if isinstance(offset, ir.Constant) and _in_entry(base):
            return self.reuse.at_entry(key, make, base, offset)
        return self.reuse.value(key, make, base, offset)

    def align(self, buffer: Buffer, indices: tuple[Expr, ...]) -> int:
        """The alignment in bytes to state on an access of ``buffer[indices]`` (at most a
        16-byte chunk in a swizzled buffer, whose chunks move)."""
        base = self.target.buffer_align(buffer)
        if buffer.swizzle:
            base = min(base, 16)
        return access_align(buffer, indices, base, self.known_factors)

    def load(self, e: Load) -> ir.Value:
        if self.lanes is not None:
            from .vector import vector_load

            return vector_load(self, e)
        return self.scalar_load(e.buffer, e.indices)

    def scalar_load(self, buffer: Buffer, indices: tuple[Expr, ...]) -> ir.Value:
        values = self.registers.values.get(buffer)
        if values is not None:
            tables = self.tables
            value = self.registers.read(self.b, buffer, indices, self._constant_var, tables)
            return from_storage(self.b, buffer.dtype, value)
        ptr = self.element(buffer, indices)
        raw = self.b.load(ptr, typ=storage_type(buffer.dtype), align=self.align(buffer, indices))
        return from_storage(self.b, buffer.dtype, raw)

    def scalar_store(self, buffer: Buffer, indices: tuple[Expr, ...], value: ir.Value) -> None:
        stored = self.target.to_storage(self.b, buffer.dtype, value)
        values = self.registers.values.get(buffer)
        if values is not None:
            values[self.register(buffer, indices)] = stored
            return
        self.b.store(stored, self.element(buffer, indices), align=self.align(buffer, indices))

    def register(self, buffer: Buffer, indices: tuple[Expr, ...]) -> int:
        """The element of a promoted buffer (`register_values`) that `indices` name; inside a
        vectorized loop, the element of lane 0."""
        return self.registers.element(buffer, indices, self._constant_var)

    def _constant_var(self, var: Var) -> int | None:
        """The value of `var` when it is a compile-time constant (lane 0's for the lane)."""
        if var is self.lane:
            return _known(self.lane_base)
        binding = self.vars.get(var)
        return _known(binding.value) if binding is not None and binding.index else None

    def constant_int(self, e: Expr) -> int | None:
        """The value of the integer `e` where the variables bound so far make it a compile-time
        constant (an unrolled loop's), else None."""
        return _known(self.index(e)) if e.dtype in dt.SIGNED else None

    # -- index mode -----------------------------------------------------------------------
    def index(self, e: Expr) -> ir.Value:
        """`e` (an integer) as an i64 index; see the module docstring."""
        if isinstance(e, Const) and dt.is_int(e.dtype):
            return self.i64(int(e.value))
        if isinstance(e, Var):
            binding = self._var(e)
            if binding.index:
                return binding.value
        elif e.dtype in dt.SIGNED:
            if isinstance(e, Binary) and e.op in _INDEX_OPS:
                return self._index_binary(e)
            if isinstance(e, Cast) and e.value.dtype in dt.SIGNED:
                return self.index(e.value)
        return arith.cast(self.b, self.value(e), e.dtype, "int64")

    def _index_binary(self, e: Binary) -> ir.Value:
        b = self.b
        x, y = self.unify(self.index(e.a), self.index(e.b))
        if e.op in ("+", "-", "*"):
            return self.index_op(e.op, x, y)
        if e.op in ("//", "%") and self._natural(e):  # floor and truncation agree
            make = (lambda: b.udiv(x, y)) if e.op == "//" else (lambda: b.urem(x, y))
            return self.reuse.value(("u" + e.op, id(x), id(y)), make, x, y)
        if e.op == "//":
            make = lambda: arith.int_floordiv(b, x, y, "int64")  # noqa: E731
        elif e.op == "%":
            make = lambda: arith.int_floormod(b, x, y, "int64")  # noqa: E731
        else:
            make = lambda: arith.min_max(b, e.op, x, y, "int64")  # noqa: E731
        return self.reuse.value((e.op, id(x), id(y)), make, x, y)

    def _natural(self, e: Binary) -> bool:
        """A division of a non-negative index by a positive constant: plain unsigned division
        is then the floor division, and is one instruction where floor division is six."""
        divisor = e.b
        return (
            isinstance(divisor, Const)
            and int(divisor.value) > 0
            and nonnegative(e.a, self.nonnegative.__contains__)
        )

    def condition(self, e: Expr) -> ir.Value:
        """A guard (``bool``); comparisons of signed integers are compared as indices."""
        if isinstance(e, Compare) and e.a.dtype in dt.SIGNED and _index_like(e.a, e.b):
            x, y = self.unify(self.index(e.a), self.index(e.b))
            make = lambda: self.b.icmp_signed(e.op, x, y)  # noqa: E731
            return self.reuse.value(("icmp " + e.op, id(x), id(y)), make, x, y)
        if isinstance(e, Binary) and e.op in ("and", "or"):
            x, y = self.unify(self.condition(e.a), self.condition(e.b))
            make = (lambda: self.b.and_(x, y)) if e.op == "and" else (lambda: self.b.or_(x, y))
            return self.reuse.value((e.op, id(x), id(y)), make, x, y)
        return self.value(e)


def _in_entry(value: ir.Value) -> bool:
    """Whether `value` is made in its function's entry block (a stack slot)."""
    block = getattr(value, "parent", None)
    return isinstance(block, ir.Block) and block is block.function.entry_basic_block


def _known(value: ir.Value) -> int | None:
    """The integer a scalar constant holds, else None."""
    if isinstance(value, ir.Constant) and isinstance(value.type, ir.IntType):
        return int(value.constant)
    return None


def swizzle_bits(buffer: Buffer) -> tuple[int, int, int]:
    """``(chunk, line, mask)``: in element offsets of `buffer`, the 16-byte chunk index starts
    at bit `chunk`, the 128-byte line index at bit `line`, and `mask` of the line's bits
    permute the chunks."""
    size = dt.itemsize(buffer.dtype)
    chunk = (16 // size).bit_length() - 1
    line = (128 // size).bit_length() - 1
    return chunk, line, {32: 1, 64: 3, 128: 7}[buffer.swizzle]


def panels(buffer: Buffer) -> tuple[int, int, int] | None:
    """``(width, rows, panel)`` of a swizzled buffer whose rows (`width` elements, `rows` of
    them in each trailing 2-D slice) are longer than its swizzle: it keeps them in panels of
    `panel` columns (the swizzle's bytes), each panel's rows contiguous, the layout the
    tensor cores' descriptors and the copy engine read. None where a row fits one panel, or
    is not a whole number of them (or padded): the chunks then move within 128-byte lines
    of the row-major layout."""
    if not buffer.swizzle or len(buffer.shape) < 2:
        return None
    panel = buffer.swizzle // dt.itemsize(buffer.dtype)
    width, rows = buffer.shape[-1], buffer.shape[-2]
    if not isinstance(width, Const) or not isinstance(rows, Const) or buffer.strides is not None:
        return None
    if int(width.value) <= panel or int(width.value) % panel:
        return None
    return int(width.value), int(rows.value), panel


def swizzled(buffer: Buffer, offset: int, xor: bool = True) -> int:
    """`ExprEmitter._swizzle` of a constant offset."""
    if not buffer.swizzle:
        return offset
    cut = panels(buffer)
    if cut is not None:
        width, rows, panel = cut
        column, row = offset % width, offset // width % rows
        whole = offset - offset % (rows * width)
        offset = whole + column // panel * rows * panel + row * panel + column % panel
    if not xor:
        return offset
    chunk, line, mask = swizzle_bits(buffer)
    return offset ^ (((offset >> line) & mask) << chunk)


def _constant_offset(buffer: Buffer, indices: tuple[Expr, ...]) -> int | None:
    """The element offset of `indices` in `buffer` when the indices and the layout are integer
    constants (`ExprEmitter.offset`'s formula), else None."""
    layout = buffer.strides if buffer.strides is not None else buffer.shape[1:]
    for exprs in (indices, layout):
        for e in exprs:
            if type(e) is not Const or not dt.is_int(e.dtype):
                return None
    if buffer.strides is not None:
        return sum(int(i.value) * int(s.value) for i, s in zip(indices, buffer.strides))
    total = int(indices[0].value)
    for extent, i in zip(layout, indices[1:]):
        total = total * int(extent.value) + int(i.value)
    return total


def _index_like(*exprs: Expr) -> bool:
    """Pure index arithmetic: variables, constants, + - * // % min max of signed integers."""
    for e in exprs:
        for n in walk_expr(e):
            if isinstance(n, (Var, Const)):
                continue
            if isinstance(n, Binary) and n.op in _INDEX_OPS and n.dtype in dt.SIGNED:
                continue
            return False
    return True


__all__ = ["Binding", "ExprEmitter", "compute_type"]
