"""``tvm.register_func`` and ``tvm.get_global_func``: functions extern stages call by name,
handed TE's arrays (`NDArray`) where schedlang's own registry hands numpy arrays."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.packed import get_global_func as _get
from ..ir.packed import register_func as _register
from .runtime import NDArray, cpu


def register_func(name: object, f: Callable | None = None, override: bool = False):
    """Register `f` under `name` (as `schedlang.register_func`); it is called with `NDArray`s."""
    if callable(name) and f is None:
        return register_func(name.__name__, name, override)

    def register(func: Callable) -> Callable:
        def with_arrays(*args: object) -> object:
            return func(*(NDArray(a, cpu(0)) if isinstance(a, np.ndarray) else a for a in args))

        _register(name, with_arrays, override)
        return func

    return register if f is None else register(f)


def get_global_func(name: str, allow_missing: bool = False) -> Callable | None:
    """The function registered as `name`; None if there is none and `allow_missing`."""
    return _get(name, allow_missing)
