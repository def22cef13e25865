"""Functions an `extern` stage calls by name (TE's ``tvm.register_func``): Python callables
registered here, and the BLAS behind numpy (``blas.matmul``, ``blas.batch_matmul``).

A function receives the stage's arrays as numpy arrays (each input whole, then the output to
write in place) and its scalars as Python numbers, in the order `call_packed` lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..errors import LoweringError
from .expr import Const, Read
from .extern import ExternBuffer, ExternOp
from .graph import together
from .tensor import Operation

_FUNCS: dict[str, Callable] = {}


def register_func(name: object, f: Callable | None = None, override: bool = False):
    """Register `f` under `name`; as a decorator, ``@sl.register_func("name")`` or
    ``@sl.register_func`` (the function's own name)."""
    if callable(name) and f is None:  # the bare decorator
        return register_func(name.__name__, name, override)
    if not isinstance(name, str):
        raise TypeError(f"register_func: the name must be a string, not {name!r}")

    def register(func: Callable) -> Callable:
        if name in _FUNCS and not override:
            raise LoweringError(
                f"a function is already registered as {name!r}; pass override=True to replace it"
            )
        _FUNCS[name] = func
        return func

    return register if f is None else register(f)


def get_global_func(name: str, allow_missing: bool = False) -> Callable | None:
    """The function registered as `name`; None if there is none and `allow_missing`."""
    if name in _FUNCS:
        return _FUNCS[name]
    if allow_missing:
        return None
    known = ", ".join(sorted(_FUNCS)) or "none"
    raise LoweringError(f"no function is registered as {name!r} (registered: {known})")


def _blas_matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray, transa=False, transb=False):
    np.matmul(a.T if transa else a, b.T if transb else b, out=c)


def _blas_batch_matmul(a: np.ndarray, b: np.ndarray, c: np.ndarray, transa=False, transb=False):
    at = np.swapaxes(a, -1, -2) if transa else a
    bt = np.swapaxes(b, -1, -2) if transb else b
    np.matmul(at, bt, out=c)


register_func("blas.matmul", _blas_matmul)
register_func("blas.batch_matmul", _blas_batch_matmul)


def call_extern(op: ExternOp, arrays: Mapping[Operation, np.ndarray]) -> None:
    """Run `op`'s call with the arrays of its inputs (and scalar parameters) in `arrays`,
    writing the arrays there of its outputs (`op` and those computed with it)."""
    func = get_global_func(op.call.func)
    outs = {out.output: arrays[out] for out in together(op)}
    args = []
    for a in op.call.args:
        if isinstance(a, ExternBuffer):
            args.append(outs[a] if a.tensor is None else arrays[a.tensor.op])
        elif isinstance(a, Const):
            args.append(a.value)
        elif isinstance(a, Read) and not a.indices and a.tensor.op in arrays:  # a parameter
            args.append(arrays[a.tensor.op][()].item())
        else:
            raise LoweringError(
                f"extern '{op.name}' passes {a} to {op.call.func!r}: scalars must be constants "
                "or scalar parameters (sl.var of a float dtype)"
            )
    func(*args)
