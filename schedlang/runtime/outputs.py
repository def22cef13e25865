"""Outputs made for the caller: ``c = kernel(a, b)``.

A kernel is called with all its arrays in `args` order, outputs included, and writes the
outputs in place. Called with its inputs alone, it makes its outputs, of the kind its inputs
are (numpy in, numpy out; torch tensors in, torch tensors out on the same device; cupy arrays
and ``sl`` device arrays likewise), runs, and returns them: the one output, or a tuple in
`args` order. Their shapes come from the sizes the inputs' shapes give (and sizes passed by
name). Every parameter the kernel writes is the output of a `compute`, which defines each of
its elements (a reduction's accumulator reads only what it wrote): an output can always be made.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import numpy as np

from ..ir import dtype as dt
from ..ir.evaluate import _bind_sizes, _size_value
from ..ir.expr import Var
from ..ir.visit import walk
from ..loopir.core.nodes import LoweredFunc
from .arguments import named_sizes
from .device_array import DeviceArray


class OutputPlan:
    """Which parameters of `func` a call may leave out (its outputs)."""

    def __init__(self, func: LoweredFunc, written: Sequence[bool]) -> None:
        self.func = func
        self.made = tuple(k for k, out in enumerate(written) if out)
        self.inputs = tuple(k for k in range(len(func.params)) if k not in self.made)

    def complete(
        self, arrays: Sequence[object], sizes: Mapping[str, int]
    ) -> tuple[list[object], tuple[object, ...]] | None:
        """Every argument of a call given `arrays` (its inputs alone) and the outputs made for
        it; None where `arrays` is a whole call (or no output can be made)."""
        if not self.made or len(arrays) != len(self.inputs):
            return None
        shapes = [tuple(int(n) for n in _shape_of(a)) for a in arrays]
        # the outputs are of the inputs' kind: a library's arrays where any input is one (a
        # number for a scalar parameter arrives here as a 0-d numpy array)
        like = next((a for a in arrays if not isinstance(a, np.ndarray)), np.empty(0))
        made = [
            _empty(like, tuple(int(n) for n in shape), dtype)
            for shape, dtype in self.shapes(shapes, sizes)
        ]
        full = list(arrays)
        for k, out in zip(self.made, made):
            full.insert(k, out)
        return full, tuple(made)

    def shapes(
        self, shapes: Sequence[Sequence[object]], sizes: Mapping[str, int]
    ) -> list[tuple[tuple[object, ...], str]]:
        """The shape and dtype of each output made, given its inputs' `shapes`. The sizes are
        worked out in Python arithmetic, so that torch's symbolic sizes (while torch traces a
        program) give symbolic output shapes."""
        params = self.func.params
        given = named_sizes(self.func, sizes)
        ops = [params[k] for k in self.inputs]
        shaped = {params[k]: _Shaped(tuple(n)) for k, n in zip(self.inputs, shapes)}
        bound = _bind_sizes(ops, shaped, given, lambda name: f"kernel(..., {name}=value)")
        found = []
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
            shape = tuple(_size_value(e, bound) for e in buffer.shape)
            found.append((shape, buffer.dtype))
        return found


def _shape_of(array: object) -> tuple:
    shape = getattr(array, "shape", None)
    if shape is None:
        raise TypeError(f"an argument of type {type(array).__name__} has no shape")
    return tuple(shape)


class _Shaped:
    """An argument as `_bind_sizes` reads it: its shape."""

    def __init__(self, shape: tuple[object, ...]) -> None:
        self.shape = shape


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
