"""TOPI's broadcasting operators (``topi.add``, ``topi.maximum``, ``topi.less``,
``topi.broadcast_to``...), as TOPI's C++ library defines them: two tensors give a compute
``T_<name>`` tagged "broadcast" over their numpy-broadcast shape; a tensor and a scalar give one
tagged "elemwise"; two scalars give the scalar expression. Arithmetic is `tensor_ops`', so
``topi.add(A, B)`` and ``A + B`` are one compute."""

from __future__ import annotations

import schedlang as _sl

from ...errors import AlgorithmError
from ...ir.dtype import is_float
from ...ir.expr import as_expr, binary, compare
from ...ir.tensor_ops import broadcast_compute, tensor_binary
from ..tir import truncdiv, truncmod
from .tag import BROADCAST, ELEMWISE
from .utils import const_value


def _apply(name: str, combine, lhs, rhs):
    if isinstance(lhs, _sl.Tensor) and isinstance(rhs, _sl.Tensor):
        return broadcast_compute(name, lhs, rhs, combine, f"T_{name}")
    if isinstance(lhs, _sl.Tensor):
        value = as_expr(rhs, like=lhs.dtype)
        return _sl.compute(lhs.shape, lambda *i: combine(lhs[i], value), f"T_{name}", ELEMWISE)
    if isinstance(rhs, _sl.Tensor):
        value = as_expr(lhs, like=rhs.dtype)
        return _sl.compute(rhs.shape, lambda *i: combine(value, rhs[i]), f"T_{name}", ELEMWISE)
    return combine(as_expr(lhs), as_expr(rhs))


def _arithmetic(name: str, op: str):
    def operator(lhs, rhs):
        if isinstance(lhs, _sl.Tensor) or isinstance(rhs, _sl.Tensor):
            return tensor_binary(op, lhs, rhs)
        return binary(op, as_expr(lhs), as_expr(rhs))

    operator.__name__ = name
    return operator


add = _arithmetic("add", "+")
subtract = _arithmetic("subtract", "-")
multiply = _arithmetic("multiply", "*")
floor_divide = _arithmetic("floor_divide", "//")
floor_mod = _arithmetic("floor_mod", "%")


def _divide(x, y):
    """TOPI's ``divide``: true division of floats, C's division (toward zero) of integers."""
    return binary("/", x, y) if is_float(x.dtype) else truncdiv(x, y)


def divide(lhs, rhs):
    return _apply("divide", _divide, lhs, rhs)


def mod(lhs, rhs):
    """C's remainder: its sign is the dividend's (``floor_mod`` is Python's)."""
    return _apply("mod", truncmod, lhs, rhs)


def maximum(lhs, rhs):
    return _apply("maximum", _sl.maximum, lhs, rhs)


def minimum(lhs, rhs):
    return _apply("minimum", _sl.minimum, lhs, rhs)


def power(lhs, rhs):
    return _apply("power", _sl.pow, lhs, rhs)


def left_shift(lhs, rhs):
    return _apply("left_shift", lambda x, y: binary("<<", x, y), lhs, rhs)


def right_shift(lhs, rhs):
    return _apply("right_shift", lambda x, y: binary(">>", x, y), lhs, rhs)


def _comparison(name: str, op: str):
    def operator(lhs, rhs):
        return _apply(name, lambda x, y: compare(op, x, y), lhs, rhs)

    operator.__name__ = name
    return operator


greater = _comparison("greater", ">")
less = _comparison("less", "<")
equal = _comparison("equal", "==")
not_equal = _comparison("not_equal", "!=")
greater_equal = _comparison("greater_equal", ">=")
less_equal = _comparison("less_equal", "<=")


def logical_and(lhs, rhs):
    return _apply("logical_and", lambda x, y: _sl.all(x, y), lhs, rhs)


def logical_or(lhs, rhs):
    return _apply("logical_or", lambda x, y: _sl.any(x, y), lhs, rhs)


def broadcast_to(data, shape):
    """`data` repeated along the dimensions where it has size 1 (or lacks) to `shape`, as
    numpy's ``broadcast_to``: ``T_broadcast_to``, tagged "broadcast"."""
    shape = tuple(shape)
    skip = len(shape) - data.ndim
    if skip < 0:
        raise AlgorithmError(
            f"broadcast_to: '{data.name}' has {data.ndim} dimensions, more than the shape {shape}"
        )
    ones = []
    for d, extent in enumerate(data.shape):
        target = shape[skip + d]
        size, wanted = const_value(extent), const_value(target)
        one = size == 1
        if not one and (size != wanted if size is not None else str(extent) != str(target)):
            raise AlgorithmError(
                f"broadcast_to: '{data.name}' of shape {tuple(data.shape)} cannot broadcast to "
                f"{shape}: dimension {d} has size {extent}, neither 1 nor {target}"
            )
        ones.append(one)

    def value(*i):
        return data[tuple(0 if one else i[skip + d] for d, one in enumerate(ones))]

    return _sl.compute(shape, value, name="T_broadcast_to", tag=BROADCAST)
