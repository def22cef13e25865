"""TOPI's constant tensors: ``topi.full`` and ``topi.full_like`` (``T_full``, ``T_full_like``,
tagged "elemwise" as TOPI tags them)."""

from __future__ import annotations

import schedlang as _sl

from .tag import ELEMWISE


def full(shape, dtype, fill_value):
    """A tensor of `shape` whose every element is `fill_value` in `dtype`."""
    value = _sl.const(fill_value, dtype)
    return _sl.compute(tuple(shape), lambda *i: value, name="T_full", tag=ELEMWISE)


def full_like(x, fill_value):
    """A tensor of `x`'s shape and dtype whose every element is `fill_value`."""
    value = _sl.const(fill_value, x.dtype)
    return _sl.compute(x.shape, lambda *i: value, name="T_full_like", tag=ELEMWISE)
