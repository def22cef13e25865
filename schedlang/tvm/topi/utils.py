"""``tvm.topi.utils.get_const_tuple``: a shape as Python ints."""

from __future__ import annotations

from ...errors import AlgorithmError
from ...ir.integers import as_int


def get_const_tuple(in_tuple) -> tuple[int, ...]:
    """The constant extents of a shape (a symbolic one is an error, as in TVM)."""
    values = []
    for e in in_tuple:
        value = as_int(getattr(e, "value", e))
        if value is None:
            raise AlgorithmError(f"get_const_tuple: '{e}' is not a constant")
        values.append(value)
    return tuple(values)
