"""Outputs made for the caller: ``c = kernel(a, b)``.

A kernel is called with all its arrays in `args` order, outputs included, and writes the
outputs in place. Called with its inputs alone, it makes its outputs, of the kind its inputs
are (numpy in, numpy out; torch tensors in, torch tensors out on the same device; cupy arrays
and ``sl`` device arrays likewise), runs, and returns them: the one output, or a tuple in
`args` order. Their shapes come from the sizes the inputs' shapes give (and sizes passed by
name). A parameter the kernel reads as well as writes is not an output it can make: it is an
input the caller passes.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import numpy as np

from ..ir import dtype as dt
from ..ir.evaluate import _bind_sizes, _size_value
from ..ir.expr import Var
from ..ir.visit import walk
from ..loopir.nodes import Load, LoweredFunc, MatrixOp
from ..loopir.visit import stmt_exprs, walk_expr, walk_stmt
from .arguments import named_sizes
from .device_array import DeviceArray


class OutputPlan:
    """Which parameters of `func` a call may leave out (outputs it only writes)."""

    def __init__(self, func: LoweredFunc, written: Sequence[bool]) -> None:
        read = set()
        for s in walk_stmt(func.body):
            for e in stmt_exprs(s):
                read |= {id(n.buffer) for n in walk_expr(e) if isinstance(n, Load)}
            if isinstance(s, MatrixOp):
                read |= {id(t.buffer) for t in s.srcs}
        self.func = func
        self.made = tuple(
            k for k, (b, out) in enumerate(zip(func.params, written)) if out and id(b) not in read
        )
        self.inputs = tuple(k for k in range(len(func.params)) if k not in self.made)

    def complete(
        self, arrays: Sequence[object], sizes: Mapping[str, int]
    ) -> tuple[list[object], tuple[object, ...]] | None:
        """Every argument of a call given `arrays` (its inputs alone) and the outputs made for
        it; None where `arrays` is a whole call (or no output can be made)."""
        params = self.func.params
        if not self.made or len(arrays) != len(self.inputs):
            return None
        given = named_sizes(self.func, sizes)
        ops = [params[k] for k in self.inputs]
        shaped = {params[k]: _Shaped(a) for k, a in zip(self.inputs, arrays)}
        bound = _bind_sizes(ops, shaped, given, lambda name: f"kernel(..., {name}=value)")
        like = arrays[0] if arrays else np.empty(0)
        made = []
        for k in self.made:
            buffer = params[k]
            for extent in buffer.shape:
                for v in walk(extent):
                    if isinstance(v, Var) and v not in bound:
                        raise ValueError(
                            f"size '{v.name}' of kernel '{self.func.name}' is not the size of "
                            f"any input, so the shape of output '{buffer.name}' is not known; "
                            f"pass it by name: kernel(..., {v.name}=value), or pass "
                            f"'{buffer.name}' itself"
                        )
            shape = tuple(int(_size_value(e, bound)) for e in buffer.shape)
            made.append(_empty(like, shape, buffer.dtype))
        full = list(arrays)
        for k, out in zip(self.made, made):
            full.insert(k, out)
        return full, tuple(made)


class _Shaped:
    """An argument as `_bind_sizes` reads it: its shape."""

    def __init__(self, array: object) -> None:
        shape = getattr(array, "shape", None)
        if shape is None:
            raise TypeError(f"an argument of type {type(array).__name__} has no shape")
        self.shape = tuple(int(n) for n in shape)


def _empty(like: object, shape: tuple[int, ...], dtype: str) -> object:
    """An uninitialised array of `shape` and `dtype` of the kind and on the device of `like`."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(like, torch.Tensor):
        return torch.empty(shape, dtype=getattr(torch, dtype), device=like.device)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(like, cupy.ndarray):
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dt.to_numpy(dtype))
    if isinstance(like, DeviceArray):
        return DeviceArray(shape, dt.to_numpy(dtype), like.device)
    return np.empty(shape, dt.to_numpy(dtype))
