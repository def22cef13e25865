"""Integers as the public API takes them: Python ints, numpy integers, and anything else that
Python itself accepts as an index (``__index__``: 0-d integer arrays, torch's integer scalars).
Sizes and factors often come out of numpy (``a.shape[0] // 4``, ``np.int64(n)``), and a user
should not have to wrap them in ``int()``. Bools are ints to Python but never a count or a
size, and floats are refused even when whole: ``5.0`` where an integer belongs is a mistake
upstream more often than not."""

from __future__ import annotations

import operator

import numpy as np


def as_int(value: object) -> int | None:
    """`value` as a Python int when it is an integer (see the module docstring), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, int):
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        return None
