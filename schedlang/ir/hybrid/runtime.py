"""A hybrid script run as Python on numpy arrays: the names its body uses that Python lacks.

This is the script's reference: `sl.reference` (and a script called on arrays) runs the
function itself, so the parsed statements are checked against Python's own reading of it.
Outputs and allocations start at zero, as the compiled script's do.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import numpy as np

from .expressions import GPU_BLOCK_THREADS


def _zeros(shape, dtype="float32", scope="global"):
    return np.zeros(tuple(int(n) for n in shape), dtype=np.dtype(str(dtype)))


def _loop_range(*args):
    return range(*(int(a) for a in args))


def _bound_range(tag, extent):
    return range(int(extent))


def _sigmoid(x):
    return np.float32(1) / (np.float32(1) + np.exp(-x)) if np.ndim(x) == 0 else 1 / (1 + np.exp(-x))


def _popcount(x):
    return type(x)(bin(int(x) & 0xFFFFFFFFFFFFFFFF).count("1"))


def _cast(dtype: str) -> Callable:
    return lambda x: np.dtype(dtype).type(x)


HYBRID_GLOBALS: dict[str, object] = {
    "output_tensor": _zeros,
    "allocate": _zeros,
    "parallel": _loop_range,
    "vectorize": _loop_range,
    "unroll": _loop_range,
    "const_range": _loop_range,
    "bind": _bound_range,
    "sqrt": np.sqrt,
    "log": np.log,
    "exp": np.exp,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "power": np.power,
    "popcount": _popcount,
    "ceil_div": lambda a, b: -(-a // b),
    "max_num_threads": lambda allow_none=True: GPU_BLOCK_THREADS,
    "floor": np.floor,
    "ceil": np.ceil,
    "likely": lambda cond: cond,
    "inf": math.inf,
    **{
        name: _cast(name)
        for name in (
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "float16",
            "float32",
            "float64",
            "bool",
        )
    },
}


@contextlib.contextmanager
def hybrid_globals(func: Callable):
    """`func`'s module globals with the hybrid names, as they were afterwards (a script called
    from a script restores what its caller had put there)."""
    namespace = func.__globals__
    saved = {key: namespace[key] for key in HYBRID_GLOBALS if key in namespace}
    namespace.update(HYBRID_GLOBALS)
    try:
        yield
    finally:
        for key in HYBRID_GLOBALS:
            namespace.pop(key, None)
        namespace.update(saved)


def run_script(func: Callable, args: tuple) -> tuple[np.ndarray, ...]:
    """The arrays `func` returns for `args` (arrays, numbers and lists of them)."""
    with hybrid_globals(func), np.errstate(all="ignore"):
        result = func(*args)
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)
