"""Whole-tensor arithmetic: ``A + B``, ``2 * A``, ``A / alpha``, ``-A``.

TE-era code writes algorithms as array arithmetic, and TE gives each operator on a tensor a new
compute, as topi's broadcast operators define it; so does schedlang, so that such code ports
unchanged and each result is an ordinary stage to schedule. The computes keep topi's names
(``T_add``, ``T_multiply``, ...; lowering tells apart two of one name) and tags: "broadcast"
for two tensors, whatever their shapes, "elemwise" for a tensor and a scalar.

Shapes broadcast as numpy's do, aligned at their last dimensions, where topi would also accept
two sizes it cannot prove equal and assume them so: here a pair of sizes broadcasts only when
they are the same expression or one of them is the constant 1. Anything else is refused when
the operator is applied, rather than becoming out-of-bounds reads found later. The elements
combine with the scalar operators (`binary`), so dtypes promote as they do between scalars.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import AlgorithmError, user_location
from .expr import Const, Expr, Var, as_expr, binary, unary
from .printer import expr_str
from .tensor import Tensor, compute
from .visit import children, walk

# topi's names for the operators: its computes are named T_<name>.
_NAMES = {
    "+": "add",
    "-": "subtract",
    "*": "multiply",
    "/": "divide",
    "//": "floor_divide",
    "%": "floor_mod",
}


def tensor_binary(op: str, a: object, b: object) -> Tensor:
    """`a op b` where `a` or `b` is a tensor and the other a tensor or a scalar."""
    name = f"T_{_NAMES[op]}"
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return broadcast_compute(op, a, b, lambda x, y: binary(op, x, y), name)
    if isinstance(a, Tensor):
        scalar = _scalar(op, a, b, b)
        return compute(a.shape, lambda *i: binary(op, a[i], scalar), name=name, tag="elemwise")
    scalar = _scalar(op, b, a, a)  # b is the tensor
    return compute(b.shape, lambda *i: binary(op, scalar, b[i]), name=name, tag="elemwise")


def made_by_arithmetic(t: Tensor) -> bool:
    """Whether `t` is the result of an operator of this module."""
    names = {f"T_{name}" for name in _NAMES.values()} | {"T_negative"}
    return getattr(t.op, "tag", "") in ("broadcast", "elemwise") and t.name in names


def _scalar(op: str, tensor: Tensor, value: object, shown: object) -> Expr:
    """`value` as the scalar side of ``tensor op value``. An element expression of a compute's
    body (``A[i] + B`` in a body) is a tensor left unindexed there, not arithmetic."""
    scalar = as_expr(value, like=tensor.dtype)
    for node in walk(scalar):
        if isinstance(node, Var) and node.kind in ("axis", "reduce"):
            raise AlgorithmError(
                f"tensor '{tensor.name}' used as a value next to '{shown}', which uses the loop "
                f"variable '{node.name}', at {user_location()}: index it, e.g. "
                f"{tensor.name}[{node.name}]; whole-tensor arithmetic such as "
                f"{tensor.name} {op} 2 takes tensors and scalars outside a compute's body"
            )
    return scalar


def tensor_negative(a: Tensor) -> Tensor:
    """``-a``: topi's ``negative``."""
    return compute(a.shape, lambda *i: unary("-", a[i]), name="T_negative", tag="elemwise")


def broadcast_compute(op: str, a: Tensor, b: Tensor, combine, name: str) -> Tensor:
    """The compute `name` (tag "broadcast") of ``combine(a[...], b[...])`` over the shape that
    `a` and `b` broadcast to; `op` names the operator in the error for shapes that do not."""
    shape, at, bt = _broadcast(op, a, b)
    return compute(shape, lambda *i: combine(a[at(i)], b[bt(i)]), name=name, tag="broadcast")


def _broadcast(op: str, a: Tensor, b: Tensor):
    """The shape of ``a op b`` and, for each operand, the function from the result's indices
    to the operand's: the last dimensions align, and a dimension of size 1 facing a larger one
    is read at 0."""
    rank = max(a.ndim, b.ndim)
    a_dims = (None,) * (rank - a.ndim) + a.shape
    b_dims = (None,) * (rank - b.ndim) + b.shape
    shape = []
    for d, (x, y) in enumerate(zip(a_dims, b_dims)):
        if x is None or (y is not None and _is_one(x)):
            shape.append(y)
        elif y is None or _is_one(y) or _same(x, y):
            shape.append(x)
        else:
            raise _incompatible(op, a, b, d - rank, x, y)
    return tuple(shape), _indexer(a, shape), _indexer(b, shape)


def _indexer(t: Tensor, shape: Sequence[Expr]):
    """The indices of `t` at the result's indices `i` (`shape` is the result's)."""
    skip = len(shape) - t.ndim
    zero = [_is_one(ext) and not _is_one(shape[skip + d]) for d, ext in enumerate(t.shape)]

    def index(i: tuple) -> tuple:
        return tuple(0 if z else i[skip + d] for d, z in enumerate(zero))

    return index


def _is_one(e: Expr) -> bool:
    return isinstance(e, Const) and e.value == 1


def _same(a: Expr, b: Expr) -> bool:
    """Whether two extents are one size: equal constants, or one expression of the same
    variables (which are compared by identity)."""
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return a.value == b.value
    if type(a) is not type(b) or isinstance(a, Var) or a.dtype != b.dtype:
        return False
    if getattr(a, "op", None) != getattr(b, "op", None):
        return False
    if getattr(a, "name", None) != getattr(b, "name", None):
        return False
    xs, ys = children(a), children(b)
    return len(xs) == len(ys) and all(_same(x, y) for x, y in zip(xs, ys))


def _incompatible(op: str, a: Tensor, b: Tensor, dim: int, x: Expr, y: Expr) -> AlgorithmError:
    def shape(t: Tensor) -> str:
        dims = [expr_str(s) for s in t.shape]
        return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"

    sizes = f"{expr_str(x)} and {expr_str(y)}"
    return AlgorithmError(
        f"cannot broadcast '{a.name}' of shape {shape(a)} and '{b.name}' of shape {shape(b)} "
        f"in '{a.name} {op} {b.name}' at {user_location()}: dimension {dim} (counted from the "
        f"last) has the sizes {sizes}; sizes broadcast when they are equal (the same "
        "sl.var) or one of them is 1"
    )
