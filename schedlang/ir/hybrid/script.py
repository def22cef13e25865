"""``@script``: a hybrid script, called on tensors (it becomes an op) or on arrays (it runs)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..expr import Expr
from ..tensor import Tensor
from .parse import parse_call
from .runtime import run_script


class HybridFunction:
    """A function written in hybrid script. Called with tensors among its arguments, it
    returns its output tensors (an op's, computed by its statements); called with arrays and
    numbers, it runs as Python and returns arrays."""

    is_hybrid_script = True

    def __init__(self, func: Callable) -> None:
        self.func = func
        self.name = func.__name__
        functools.update_wrapper(self, func)

    def __call__(self, *args: object):
        if any(isinstance(a, (Tensor, Expr)) for a in _flat(args)):
            outputs = parse_call(self.func, args)
            return outputs[0] if len(outputs) == 1 else list(outputs)
        results = run_script(self.func, tuple(_arrays(a) for a in args))
        return results[0] if len(results) == 1 else results


def script(func: Callable) -> HybridFunction:
    """The hybrid script `func` (see `HybridFunction`)."""
    return HybridFunction(func)


def _flat(values) -> list:
    out = []
    for v in values:
        out.extend(_flat(v) if isinstance(v, (list, tuple)) else [v])
    return out


def _arrays(value: object) -> object:
    """A list of numbers as the array TE's Python run makes of it (it is indexed ``b[i, j]``
    as in the compiled script); a list of arrays stays a list."""
    if isinstance(value, (list, tuple)) and value:
        if isinstance(value[0], np.ndarray):
            return [np.asarray(v) for v in value]
        return np.asarray(value)
    return value
