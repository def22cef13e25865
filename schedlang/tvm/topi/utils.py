"""``tvm.topi.utils``: shapes and sizes as Python ints, as TOPI's operators read them."""

from __future__ import annotations

from ...errors import AlgorithmError
from ...ir.integers import as_int
from ..arith import Analyzer


def simplify(e):
    """`e` with its integer arithmetic on constants folded (``5 + 5`` is ``10``), as TVM
    simplifies the extents its operators compute."""
    return Analyzer().simplify(e)


def simplified(shape) -> tuple:
    """A shape with each extent `simplify`'d."""
    return tuple(simplify(e) for e in shape)


def const_value(e) -> int | None:
    """`e` (an int, or an expression that is a constant) as an int; None if it is symbolic."""
    return as_int(getattr(simplify(e), "value", e))


def get_const_int(e) -> int:
    """The constant value of `e` (a symbolic one is an error, as in TVM)."""
    value = const_value(e)
    if value is None:
        raise AlgorithmError(f"get_const_int: '{e}' is not a constant")
    return value


def get_const_tuple(in_tuple) -> tuple[int, ...]:
    """The constant extents of a shape (a symbolic one is an error, as in TVM)."""
    values = []
    for e in in_tuple:
        value = const_value(e)
        if value is None:
            raise AlgorithmError(f"get_const_tuple: '{e}' is not a constant")
        values.append(value)
    return tuple(values)


def is_empty_shape(shape) -> bool:
    """Whether a shape has a dimension of size 0 (TOPI's schedules skip such outputs)."""
    return any(const_value(n) == 0 for n in shape)


def normalize_axis(axis: int, ndim: int, what: str) -> int:
    """`axis` counted from the front (a negative one counts from the back), checked."""
    if not -ndim <= axis < ndim:
        raise AlgorithmError(f"{what}: axis {axis} is out of range for {ndim} dimensions")
    return axis + ndim if axis < 0 else axis
