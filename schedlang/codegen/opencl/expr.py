"""Loop-IR expressions as OpenCL C, with the reference evaluator's numerics.

Every value is computed in its dtype's compute type (`types`); where C's operator means
something else (floor division, shifts past the width, NaN in min/max, 16-bit floats) a helper
function does (`helpers`). Operators are parenthesised, as TVM's OpenCL source is, so that no
reader needs C's precedence table. Integer ``//`` and ``%`` by a positive constant of an index
that is never negative (isl's usual loop bounds) print as C's ``/`` and ``%``, which agree with
flooring there.
"""

from __future__ import annotations

from ...errors import InternalError, LoweringError
from ...ir import dtype as dt
from ...ir.expr import Binary, Call, Cast, Compare, Const, Expr, Select, Unary, Var
from ...ir.intrinsics import EXTERN, reference_name
from ...loopir.core.nodes import Buffer, Load
from ...loopir.index.nonneg import nonnegative
from .helpers import Helpers
from .names import Names
from .types import NARROW_INTS, compute_type, literal

_MATH = {"abs": "fabs", "round": "rint", "fast_exp2": "exp2"}
_PLAIN_MATH = ("exp", "exp2", "log", "log2", "sqrt", "tanh", "erf", "sin", "cos", "pow")
_PLAIN_MATH += ("floor", "ceil", "fma")
_NATIVE = ("cos", "exp", "exp2", "exp10", "log", "log2", "log10", "sin", "sqrt", "tan")
HARDWARE = {
    "blockIdx.x": "get_group_id(0)",
    "blockIdx.y": "get_group_id(1)",
    "blockIdx.z": "get_group_id(2)",
    "threadIdx.x": "get_local_id(0)",
    "threadIdx.y": "get_local_id(1)",
    "threadIdx.z": "get_local_id(2)",
}


class ExprPrinter:
    """Expressions of one kernel: its identifiers (`names`), the helpers it calls, and the
    loop variables known never to be negative."""

    def __init__(self, names: Names, helpers: Helpers) -> None:
        self.names = names
        self.helpers = helpers
        self.nonnegative: set[Var] = set()
        self.on_chip: set[int] = set()  # ids of shared and private buffers (stored computed)

    def __call__(self, e: Expr) -> str:
        """`e` without parentheses around the whole."""
        return _bare(self.expr(e))

    def expr(self, e: Expr) -> str:
        if isinstance(e, Const):
            return literal(e.value, e.dtype)
        if isinstance(e, Var):
            return self.names(e, e.name)
        if isinstance(e, Load):
            return self.load(e.buffer, e.indices)
        if isinstance(e, Binary):
            return self._binary(e)
        if isinstance(e, Compare):
            return f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"
        if isinstance(e, Unary):
            return self._unary(e)
        if isinstance(e, Select):
            parts = (self.expr(e.cond), self.expr(e.true_value), self.expr(e.false_value))
            return "({} ? {} : {})".format(*parts)
        if isinstance(e, Cast):
            return self._cast(e)
        if isinstance(e, Call):
            return self._call(e)
        raise InternalError(f"the opencl target cannot print {type(e).__name__} '{e}'")

    # memory

    def buffer(self, buffer: Buffer) -> str:
        return self.names(buffer, buffer.name)

    def offset(self, buffer: Buffer, indices: tuple[Expr, ...]) -> str:
        """The element offset of `indices` into `buffer` (row-major, or its strides)."""
        if buffer.swizzle:
            raise LoweringError(
                f"the shared buffer '{buffer.name}' is swizzled, a layout for tensor cores and "
                "the copy engine; the opencl target keeps shared buffers plain: drop swizzle(), "
                "or build for 'cuda'"
            )
        if not indices:
            return "0"
        if buffer.strides is not None:
            terms = [f"({self.expr(i)} * {self.expr(s)})" for i, s in zip(indices, buffer.strides)]
            return _bare(_sum(terms))
        text = self.expr(indices[0])
        for index, extent in zip(indices[1:], buffer.shape[1:]):
            text = f"(({text} * {self.expr(extent)}) + {self.expr(index)})"
        return _bare(text)

    def load(self, buffer: Buffer, indices: tuple[Expr, ...]) -> str:
        name, at = self.buffer(buffer), self.offset(buffer, indices)
        if id(buffer) in self.on_chip:
            return f"{name}[{at}]"
        if buffer.dtype == "float16":
            return f"vload_half({at}, {name})"
        if buffer.dtype == "bfloat16":
            return f"{self.helpers.bf16_value()}({name}[{at}])"
        if buffer.dtype == "bool":
            return f"({name}[{at}] != 0)"
        return f"{name}[{at}]"

    def store(self, buffer: Buffer, indices: tuple[Expr, ...], value: Expr) -> str:
        """The statement storing `value` (without its semicolon)."""
        name, at, text = self.buffer(buffer), self.offset(buffer, indices), self(value)
        if id(buffer) in self.on_chip:
            return f"{name}[{at}] = {text}"
        if buffer.dtype == "float16":
            return f"vstore_half_rte({text}, {at}, {name})"
        if buffer.dtype == "bfloat16":
            return f"{name}[{at}] = {self.helpers.bf16_bits()}({text})"
        if buffer.dtype == "bool":
            return f"{name}[{at}] = (uchar)({text})"
        return f"{name}[{at}] = {text}"

    # arithmetic

    def _binary(self, e: Binary) -> str:
        op, dtype = e.op, e.dtype
        a, b = self.expr(e.a), self.expr(e.b)
        if op in ("and", "or"):
            return f"({a} {'&&' if op == 'and' else '||'} {b})"
        if op in ("min", "max"):
            return self._min_max(op, dtype, a, b)
        if op in ("//", "%"):
            if self._c_division(e):
                return f"({a} {'/' if op == '//' else '%'} {b})"
            name = self.helpers.divide(op, dtype, dtype in dt.SIGNED, dt.is_float(dtype))
            return self.rounded(f"{name}({_bare(a)}, {_bare(b)})", dtype)
        if op in ("<<", ">>"):
            if not (isinstance(e.b, Const) and 0 <= int(e.b.value) < dt.bits(dtype)):
                name = self.helpers.shift(op, dtype, dtype in dt.SIGNED)
                return f"{name}({_bare(a)}, {_bare(b)})"
        return self.rounded(f"({a} {op} {b})", dtype)

    def _c_division(self, e: Binary) -> bool:
        divisor = e.b
        if not dt.is_int(e.dtype) or not isinstance(divisor, Const) or int(divisor.value) <= 0:
            return False
        return nonnegative(e.a, lambda v: v in self.nonnegative or v.kind == "size")

    def _min_max(self, op: str, dtype: str, a: str, b: str) -> str:
        if dtype == "bool":
            return f"({a} {'&&' if op == 'min' else '||'} {b})"
        if dt.is_float(dtype):
            return self.rounded(f"{self.helpers.min_max(op, dtype)}({_bare(a)}, {_bare(b)})", dtype)
        return f"{op}({_bare(a)}, {_bare(b)})"

    def rounded(self, text: str, dtype: str, source: str = "float32") -> str:
        """`text`, a value computed for `dtype`, rounded to it: 16-bit floats to their
        precision (from a `source` float or double), narrow integers back to their width."""
        if dtype == "float16":
            return f"{self.helpers.round_half(source)}({_bare(text)})"
        if dtype == "bfloat16":
            return f"{self.helpers.round_bf16()}({_bare(text)})"
        if dtype in NARROW_INTS:
            return f"(({compute_type(dtype)}){text})"
        return text

    def _unary(self, e: Unary) -> str:
        a = self.expr(e.a)
        a = f"({a})" if a.startswith("-") else a  # not a decrement
        if e.op == "not":
            return f"(!{a})"
        return self.rounded(f"({e.op}{a})", e.dtype)

    def _cast(self, e: Cast) -> str:
        source, target = e.value.dtype, e.dtype
        value = self.expr(e.value)
        if source == target:
            return value
        if target == "bool":
            return f"({value} != 0)"
        t = compute_type(target)
        if dt.is_float(source) and dt.is_int(target):  # toward zero, saturated, NaN to 0
            return f"convert_{t}_sat_rtz({_bare(value)})"
        if target in ("float16", "bfloat16"):
            if source == "float64" and target == "float16":
                return self.rounded(value, target, "float64")
            widened = value if dt.is_float(source) else f"(({t}){value})"
            return self.rounded(widened, target)
        return f"(({t}){value})"

    def _call(self, e: Call) -> str:
        parts = [self(a) for a in e.args]
        args = ", ".join(parts)
        dtype, name = e.dtype, e.name
        if not dt.is_float(dtype):
            if name == "popcount":
                return f"popcount({args})"
            if name == "abs":  # OpenCL's abs of a signed type is unsigned
                return f"(({compute_type(dtype)})abs({args}))" if dtype in dt.SIGNED else args
            raise InternalError(f"the math function '{name}' of the integer type {dtype}")
        if name.startswith(EXTERN):
            if reference_name(name[len(EXTERN) :]) == "fdividef":  # CUDA's, a plain division
                return self.rounded(f"({self.expr(e.args[0])} / {self.expr(e.args[1])})", dtype)
            return self.rounded(_extern(name[len(EXTERN) :], parts), dtype)
        if name == "rsqrt":
            one = literal(1.0, "float64" if dtype == "float64" else "float32")
            return self.rounded(f"({one} / sqrt({args}))", dtype)
        if name == "sigmoid":
            return self.rounded(f"{self.helpers.sigmoid(dtype)}({args})", dtype)
        if name in _MATH or name in _PLAIN_MATH:
            return self.rounded(f"{_MATH.get(name, name)}({args})", dtype)
        raise InternalError(f"the opencl target does not know the math function '{name}'")


def _extern(symbol: str, args: list[str]) -> str:
    """A C math name called as OpenCL C spells it: its built-ins are overloaded (``exp``
    for ``expf``), and CUDA's fast ``__expf`` is ``native_exp`` where OpenCL has one."""
    base = reference_name(symbol)
    name = f"native_{base}" if symbol.startswith("__") and base in _NATIVE else base
    return f"{name}({', '.join(args)})"


def _sum(terms: list[str]) -> str:
    return "(" + " + ".join(terms) + ")" if len(terms) > 1 else terms[0]


def _wrapped(text: str) -> bool:
    """Whether `text` is one parenthesised whole, ``(a + b)`` but not ``(a) + (b)``."""
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for k, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0 and k < len(text) - 1:
            return False
    return True


def _bare(text: str) -> str:
    return text[1:-1] if _wrapped(text) else text
