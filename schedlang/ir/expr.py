"""Expression nodes of the algorithm language.

Nodes are immutable and compared by identity: ``a == b`` builds a comparison node, as in TE, so
structural questions are answered by the visitors, never by ``__eq__``. Construction goes through
the functions at the bottom of this file (and the operators that call them), which check dtypes and
insert explicit casts: in a finished tree the operands of an arithmetic node always have the node's
dtype, and the operands of a comparison have equal dtypes. Later stages rely on that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import AlgorithmError, entry_point
from . import dtype as dt
from .integers import as_int
from .tensor_slice import TensorSlice

if TYPE_CHECKING:
    from .tensor import IterVar, Tensor

Scalar = bool | int | float

ARITH_OPS = ("+", "-", "*", "/", "//", "%", "min", "max")
BITWISE_OPS = ("&", "|", "^", "<<", ">>")
LOGICAL_OPS = ("and", "or")
COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")


class Expr:
    """Base of all expression nodes; carries the operator overloads.

    The operators are entry points, as ``sl.compute`` is: a mistake in ``A[0] / 2`` written
    outside a compute gets a traceback that ends at the user's line too.
    """

    __slots__ = ()
    dtype: str

    @entry_point
    def __add__(self, other):
        if _is_tensor(other):
            return NotImplemented
        return binary("+", self, other)

    @entry_point
    def __radd__(self, other):
        return binary("+", other, self)

    @entry_point
    def __sub__(self, other):
        if _is_tensor(other):
            return NotImplemented
        return binary("-", self, other)

    @entry_point
    def __rsub__(self, other):
        return binary("-", other, self)

    @entry_point
    def __mul__(self, other):
        if _is_tensor(other):
            return NotImplemented
        return binary("*", self, other)

    @entry_point
    def __rmul__(self, other):
        return binary("*", other, self)

    @entry_point
    def __truediv__(self, other):
        if _is_tensor(other):
            return NotImplemented
        return binary("/", self, other)

    @entry_point
    def __rtruediv__(self, other):
        return binary("/", other, self)

    @entry_point
    def __floordiv__(self, other):
        if _is_tensor(other):
            return NotImplemented
        return binary("//", self, other)

    @entry_point
    def __rfloordiv__(self, other):
        return binary("//", other, self)

    @entry_point
    def __mod__(self, other):
        if _is_tensor(other):
            return NotImplemented
        return binary("%", self, other)

    @entry_point
    def __rmod__(self, other):
        return binary("%", other, self)

    @entry_point
    def __pow__(self, other):
        return power(self, other)

    @entry_point
    def __rpow__(self, other):
        return power(other, self)

    @entry_point
    def __and__(self, other):
        return binary("&", self, other)

    @entry_point
    def __rand__(self, other):
        return binary("&", other, self)

    @entry_point
    def __or__(self, other):
        return binary("|", self, other)

    @entry_point
    def __ror__(self, other):
        return binary("|", other, self)

    @entry_point
    def __xor__(self, other):
        return binary("^", self, other)

    @entry_point
    def __rxor__(self, other):
        return binary("^", other, self)

    @entry_point
    def __lshift__(self, other):
        return binary("<<", self, other)

    @entry_point
    def __rlshift__(self, other):
        return binary("<<", other, self)

    @entry_point
    def __rshift__(self, other):
        return binary(">>", self, other)

    @entry_point
    def __rrshift__(self, other):
        return binary(">>", other, self)

    @entry_point
    def __neg__(self):
        return unary("-", self)

    @entry_point
    def __pos__(self):
        return as_expr(self)

    @entry_point
    def __invert__(self):
        return unary("~", self)

    @entry_point
    def __eq__(self, other):  # type: ignore[override]
        return compare("==", self, other)

    @entry_point
    def equal(self, other):
        """``self == other`` as an expression (TE's spelling)."""
        return compare("==", self, other)

    @entry_point
    def __ne__(self, other):  # type: ignore[override]
        return compare("!=", self, other)

    @entry_point
    def __lt__(self, other):
        return compare("<", self, other)

    @entry_point
    def __le__(self, other):
        return compare("<=", self, other)

    @entry_point
    def __gt__(self, other):
        return compare(">", self, other)

    @entry_point
    def __ge__(self, other):
        return compare(">=", self, other)

    __hash__ = object.__hash__

    @entry_point
    def __bool__(self):
        raise AlgorithmError(
            f"cannot use the expression '{self}' as a Python bool (in `if`, `and`, `or`, `not`): "
            "use sl.if_then_else(cond, a, b), sl.all(...), sl.any(...), or the operators & | ~"
        )

    @entry_point
    def __abs__(self):
        from .math import abs as absolute

        return absolute(self)

    @entry_point
    def __float__(self):
        from .ufuncs import not_a_number

        raise not_a_number(self, "float")

    @entry_point
    def __int__(self):
        from .ufuncs import not_a_number

        raise not_a_number(self, "int")

    @entry_point
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """``np.exp(x)`` is ``sl.exp(x)``, and so on for numpy's ufuncs that schedlang has."""
        from .ufuncs import apply_ufunc

        return apply_ufunc(ufunc, method, inputs, kwargs)

    @entry_point
    def astype(self, dtype: object) -> Expr:
        """This expression converted to `dtype` (C conversion rules; floats truncate to ints)."""
        return cast(self, dtype)

    def __str__(self) -> str:
        from .printer import expr_str

        return expr_str(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self} : {self.dtype}>"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Var(Expr):
    """A named integer: a symbolic size (kind "size"), a compute axis ("axis"), a reduce axis,
    or a hardware index in a store predicate ("thread", named by its tag)."""

    name: str
    dtype: str = "int32"
    kind: str = "size"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Const(Expr):
    value: Scalar
    dtype: str

    def __int__(self) -> int:
        return int(self.value)

    def __index__(self) -> int:
        if not dt.is_int(self.dtype):
            raise TypeError(f"{self} of dtype {self.dtype} is not an integer")
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Binary(Expr):
    """Arithmetic (ARITH_OPS), bitwise (BITWISE_OPS, ints) or logical (LOGICAL_OPS, bools)."""

    op: str
    a: Expr
    b: Expr
    dtype: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Compare(Expr):
    op: str
    a: Expr
    b: Expr
    dtype: str = "bool"

    def __bool__(self) -> bool:
        """Lets `x in list`, `==` between constants and identity checks work in plain Python."""
        if isinstance(self.a, Const) and isinstance(self.b, Const):
            return bool(_PY_COMPARE[self.op](self.a.value, self.b.value))
        if self.op == "==":
            return self.a is self.b
        if self.op == "!=":
            return self.a is not self.b
        raise AlgorithmError(
            f"cannot use the expression '{self}' as a Python bool (in `if`, `and`, `or`, "
            "`not`, or Python's max() and min(), which compare their arguments): use "
            "sl.if_then_else(cond, a, b), sl.all(...), sl.any(...), or the operators & | ~; "
            "for the larger or smaller of two expressions, sl.max(a, b) or sl.min(a, b)"
        )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Unary(Expr):
    """``-`` (negation), ``~`` (bitwise not of ints) or ``not`` (of bools)."""

    op: str
    a: Expr
    dtype: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Select(Expr):
    """``if_then_else``: only the chosen branch is evaluated, so it may guard an access."""

    cond: Expr
    true_value: Expr
    false_value: Expr
    dtype: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Cast(Expr):
    value: Expr
    dtype: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Call(Expr):
    """A math function from `schedlang.ir.math` (``exp``, ``fma``, ...)."""

    name: str
    args: tuple[Expr, ...]
    dtype: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Read(Expr):
    """An element of a tensor."""

    tensor: Tensor
    indices: tuple[Expr, ...]
    dtype: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class CommReducer:
    """A commutative, associative combiner specialised to one dtype, with its identity: a
    constant, or, as TE allows, an expression of the compute's indices (the combination may
    use them too: each element is reduced with a reducer of its own, `visit.by_element`)."""

    name: str
    lhs: Var
    rhs: Var
    result: Expr
    identity: Expr

    @property
    def dtype(self) -> str:
        return self.identity.dtype


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Reduce(Expr):
    """A reduction; only ever the whole body of a compute.

    A reduction over tuples (TE's argmax) is one Reduce per component, each the body of one
    output of a multi-output compute: `parts` holds every component's combiner (whose result
    may read the other components' partial values) and `value_index` says which is this one's
    (`combiner` is ``parts[value_index]``). The components are combined together, never one
    after another."""

    combiner: CommReducer
    source: Expr
    axis: tuple[IterVar, ...]
    where: Expr | None
    dtype: str
    parts: tuple[CommReducer, ...] = ()
    value_index: int = 0


def _is_tensor(value: object) -> bool:
    """Whether `value` is a tensor: ``x + A`` is then whole-tensor arithmetic, which the
    tensor's reflected operator defines (``alpha * A`` as in TE)."""
    from .tensor import Tensor

    return isinstance(value, Tensor)


_PY_COMPARE = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@entry_point
def const(value: Scalar, dtype: object = None) -> Const:
    """A constant; without `dtype` it is int32, float32 or bool by the Python type."""
    if isinstance(value, Const):
        value = value.value
    value = _plain(value)
    name = dt.default_dtype(value) if dtype is None else dt.canonical(dtype)
    if dt.is_float(name):
        value = float(value)
    elif name == "bool":
        value = bool(value)
    else:
        if isinstance(value, float) and not value.is_integer():
            raise AlgorithmError(f"constant {value!r} is not an integer, so it cannot be {name}")
        value = int(value)
        lo, hi = dt.min_value(name), dt.max_value(name)
        if not lo <= value <= hi:
            raise AlgorithmError(f"constant {value} does not fit in {name} [{lo}, {hi}]")
    return Const(value, name)


def as_expr(value: object, like: str | None = None) -> Expr:
    """`value` as an expression; a Python scalar takes a dtype next to `like` (see dtype.py)."""
    from .tensor import IterVar, Tensor

    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, Expr):
        return value
    index = getattr(value, "var", None)  # a schedule's hardware index, TE's thread IterVar
    if isinstance(index, Var) and index.kind == "thread":
        return index
    value = _plain(value)
    if isinstance(value, (bool, int, float)):
        name = dt.default_dtype(value) if like is None else dt.scalar_dtype(value, like)
        return const(value, name)
    if isinstance(value, Tensor):
        raise _tensor_as_value(value)
    if isinstance(value, TensorSlice):
        raise value.incomplete()
    if hasattr(value, "dtype") and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return const(value.item(), value.dtype)
    raise AlgorithmError(f"cannot use {value!r} of type {type(value).__name__} in an expression")


def _tensor_as_value(tensor: Tensor) -> AlgorithmError:
    from .tensor_ops import made_by_arithmetic

    message = f"tensor '{tensor.name}' used as a value: index it, e.g. {tensor.name}[i, j]"
    if made_by_arithmetic(tensor):
        message += (
            f"; '{tensor.name}' is whole-tensor arithmetic ({tensor}): in a compute's body, "
            "index the tensors inside it instead"
        )
    return AlgorithmError(message)


def _plain(value: object) -> object:
    """`value`, or the Python int it holds when it is another kind of integer (numpy's): it
    then takes the dtype of the expression beside it, as a Python int does."""
    if isinstance(value, (Expr, bool, int, float)):
        return value
    integer = as_int(value)
    return value if integer is None else integer


def _operands(a: object, b: object) -> tuple[Expr, Expr]:
    a, b = _plain(a), _plain(b)
    a_is_expr = not isinstance(a, (bool, int, float))
    b_is_expr = not isinstance(b, (bool, int, float))
    if a_is_expr:
        ea = as_expr(a)
        return ea, as_expr(b, like=ea.dtype)
    if b_is_expr:
        eb = as_expr(b)
        return as_expr(a, like=eb.dtype), eb
    return as_expr(a), as_expr(b)


def _convert(e: Expr, dtype: str) -> Expr:
    if e.dtype == dtype:
        return e
    if isinstance(e, Const):
        if dt.is_float(e.dtype) and dt.is_int(dtype):  # folded as a kernel converts it
            return const(dt.constant_to_int(e.value, e.dtype, dtype), dtype)
        return const(e.value, dtype)
    return Cast(e, dtype)


def _shown(op: str, a: Expr, b: Expr) -> str:
    """`a op b` as text for a message, parenthesised as the printer does."""
    return str(Binary(op, a, b, a.dtype))


def binary(op: str, a: object, b: object) -> Expr:
    """`a op b` with dtype checks and promotion (rules in dtype.py)."""
    ea, eb = _operands(a, b)
    kinds = (ea.dtype, eb.dtype)
    if op in ("&", "|", "^") and kinds == ("bool", "bool"):
        op = {"&": "and", "|": "or", "^": "^"}[op]
        return Binary(op, ea, eb, "bool")
    if op in BITWISE_OPS:
        if any(dt.is_float(k) for k in kinds):
            raise AlgorithmError(
                f"cannot combine {ea.dtype} and {eb.dtype} with '{op}' in '{_shown(op, ea, eb)}': "
                "bitwise operators need integers or bools (compare first, e.g. (x > 0) & (y > 0))"
            )
        out = dt.promote(*kinds)
        if out == "bool":
            out = "int32"
        return Binary(op, _convert(ea, out), _convert(eb, out), out)
    if op in ARITH_OPS and kinds == ("bool", "bool") and op not in ("min", "max"):
        raise AlgorithmError(
            f"cannot combine bool and bool with '{op}' in '{_shown(op, ea, eb)}': "
            "cast to a number first with .astype('int32'), or use & | for logic"
        )
    out = dt.promote(*kinds)
    if op == "/" and not dt.is_float(out):
        raise AlgorithmError(
            f"'/' between integers in '{_shown(op, ea, eb)}': use '//' for floor division, "
            "or cast one side to a float with .astype('float32')"
        )
    return Binary(op, _convert(ea, out), _convert(eb, out), out)


def compare(op: str, a: object, b: object) -> Expr:
    ea, eb = _operands(a, b)
    if (ea.dtype == "bool") != (eb.dtype == "bool") and op not in ("==", "!="):
        raise AlgorithmError(
            f"cannot order a bool against {eb.dtype if ea.dtype == 'bool' else ea.dtype} in "
            f"'{Compare(op, ea, eb)}': cast the bool with .astype('int32')"
        )
    common = dt.promote(ea.dtype, eb.dtype)
    return Compare(op, _convert(ea, common), _convert(eb, common))


def unary(op: str, a: object) -> Expr:
    ea = as_expr(a)
    if op == "-":
        if ea.dtype == "bool":
            raise AlgorithmError(f"cannot negate the bool '{ea}': use ~ for logical not")
        if isinstance(ea, Const):
            return const(-ea.value, ea.dtype)
        return Unary("-", ea, ea.dtype)
    if ea.dtype == "bool":
        return Unary("not", ea, "bool")
    if dt.is_float(ea.dtype):
        raise AlgorithmError(f"'~' needs an integer or a bool, not {ea.dtype}, in '~{ea}'")
    return Unary("~", ea, ea.dtype)


def power(a: object, b: object) -> Expr:
    """`a ** b`: a float power, or an integer power with a constant exponent >= 0."""
    ea, eb = _operands(a, b)
    out = dt.promote(ea.dtype, eb.dtype)
    if dt.is_float(out):
        return Call("pow", (_convert(ea, out), _convert(eb, out)), out)
    if not (isinstance(eb, Const) and eb.value >= 0):
        raise AlgorithmError(
            f"integer power '{ea} ** {eb}' needs a constant exponent >= 0; "
            "cast the base to a float for a general power"
        )
    if eb.value == 0:
        return const(1, out)
    base = _convert(ea, out)
    result = base
    for _ in range(int(eb.value) - 1):
        result = Binary("*", result, base, out)
    return result


def cast(value: object, dtype: object) -> Expr:
    e = as_expr(value)
    return _convert(e, dt.canonical(dtype))


@entry_point
def select(cond: object, true_value: object, false_value: object) -> Expr:
    """``cond ? true_value : false_value``; only the chosen branch is evaluated."""
    c = as_expr(cond)
    if c.dtype != "bool":
        raise AlgorithmError(
            f"the condition of if_then_else must be a bool, got {c.dtype} in '{c}': "
            "compare it, e.g. x != 0"
        )
    t, f = _operands(true_value, false_value)
    out = dt.promote(t.dtype, f.dtype)
    return Select(c, _convert(t, out), _convert(f, out), out)


def logical(op: str, conds: tuple[object, ...]) -> Expr:
    """`and`/`or` of bool conditions (``sl.all`` / ``sl.any``)."""
    if not conds:
        return const(op == "and", "bool")
    exprs = [as_expr(c) for c in conds]
    for e in exprs:
        if e.dtype != "bool":
            name = "sl.all" if op == "and" else "sl.any"
            raise AlgorithmError(f"{name} takes conditions (bools), got {e.dtype} in '{e}'")
    result = exprs[0]
    for e in exprs[1:]:
        result = Binary(op, result, e, "bool")
    return result
