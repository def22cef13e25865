"""Checking the arrays a kernel is called with, before any machine code touches them.

Compiled code trusts its arguments completely (a wrong shape is a wild write), so everything is
checked here, in `args` order and with messages naming the parameter: the count, that each is a
numpy array (or an ``sl.array`` on the cpu, or a DLPack export of host memory such as a torch
CPU tensor, read through ``numpy.from_dlpack`` without a copy) of the parameter's dtype and
rank, that shapes agree with each other through the symbolic sizes, that outputs are
C-contiguous and writable, that sizes and element counts fit the kernel's index type
(`size_limits`), and that no output overlaps another argument (the generated code assumes
its buffers do not alias).

The generated code indexes every buffer as a dense row-major array. An input with any other
layout (a slice with a step, a transpose, a broadcast) is copied to a C-contiguous temporary for
the call, which costs a pass over it; an output cannot be, since the kernel writes in place, so
one that is not C-contiguous is an error.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.evaluate import _bind_sizes
from ..ir.expr import Var
from ..ir.integers import as_int
from ..loopir.core.nodes import CallExtern, LoweredFunc, MatrixOp, Store
from ..loopir.core.visit import walk_stmt
from .argument_kinds import dtype_error, untracked
from .device_array import DeviceArray
from .dlpack.abi import HOST_DEVICES, device_name
from .dlpack.importer import device_of, host_array
from .size_limits import SizeLimits


def written_params(func: LoweredFunc) -> tuple[bool, ...]:
    """Per parameter, whether the kernel stores to it (an output)."""
    stored = {id(s.buffer) for s in walk_stmt(func.body) if isinstance(s, Store)}
    stored |= {id(s.dst.buffer) for s in walk_stmt(func.body) if isinstance(s, MatrixOp)}
    calls = [s for s in walk_stmt(func.body) if isinstance(s, CallExtern)]
    return tuple(id(b) in stored or any(c.writes(b) for c in calls) for b in func.params)


@dataclass(frozen=True)
class Call:
    """Checked arguments as the entry point takes them."""

    buffers: ctypes.Array
    sizes: ctypes.Array
    arrays: tuple[np.ndarray, ...]  # what the kernel reads and writes, kept alive for the call


def check_arguments(
    func: LoweredFunc,
    written: Sequence[bool],
    arrays: Sequence[object],
    sizes: Mapping[str, int],
    limits: SizeLimits,
) -> Call:
    """Validate `arrays` (and `sizes` given by name) for `func`, whose `written` parameters
    and `limits` were worked out at build; raise ValueError/TypeError."""
    params = func.params
    named_sizes(func, sizes)  # an array passed by name is refused before the count
    if len(arrays) != len(params):
        names = ", ".join(b.name for b in params)
        raise TypeError(
            f"kernel '{func.name}' takes {len(params)} arrays ({names}), got {len(arrays)}"
        )
    given = [untracked(b.name, array, out) for b, array, out in zip(params, arrays, written)]
    arrays = [_on_host(buffer, array) for buffer, array in zip(params, given)]
    for buffer, array, original, out in zip(params, arrays, given, written):
        _check_array(buffer, array, original, out)
    values = size_values(func, arrays, sizes)
    limits.check(values, arrays)
    arrays = [_layout(buffer, array, out) for buffer, array, out in zip(params, arrays, written)]
    _check_overlap(params, arrays, written)
    buffers = (ctypes.c_void_p * max(1, len(arrays)))(*(a.ctypes.data for a in arrays))
    size_array = (ctypes.c_int64 * max(1, len(values)))(*values)
    return Call(buffers, size_array, tuple(arrays))


def size_values(func: LoweredFunc, shaped: Sequence[object], sizes: Mapping[str, int]) -> list[int]:
    """The value of each of `func.sizes`, read off the shapes of `shaped` (one object with a
    ``.shape`` per parameter) or given by name in `sizes`; ValueError/TypeError otherwise."""
    given = named_sizes(func, sizes)
    bound = _bind_sizes(list(func.params), dict(zip(func.params, shaped)), given, _pass_by_name)
    values = []
    for v in func.sizes:
        if v not in bound:
            raise ValueError(
                f"size '{v.name}' of kernel '{func.name}' is not the size of any argument; "
                f"pass it by name: {_pass_by_name(v.name)}"
            )
        values.append(int(bound[v]))
    return values


def _pass_by_name(name: str) -> str:
    return f"kernel(..., {name}=value)"


def _layout(buffer, array: np.ndarray, out: bool) -> np.ndarray:
    """`array` as the kernel may use it: inputs made C-contiguous, outputs checked."""
    if not out:
        return array if array.flags.c_contiguous else np.ascontiguousarray(array)
    if not array.flags.c_contiguous:
        raise ValueError(
            f"argument '{buffer.name}' is an output but is not C-contiguous (strides "
            f"{array.strides}); the kernel writes in place, so pass a C-contiguous array "
            f"(np.empty({array.shape}, np.{array.dtype})) and copy it into this one afterwards"
        )
    if not array.flags.writeable:
        raise ValueError(f"argument '{buffer.name}' is an output but its array is read-only")
    return array


def _on_host(buffer, array: object) -> object:
    """The numpy array behind an ``sl.array(..., device="cpu")`` or a DLPack export of host
    memory; GPU arrays are refused."""
    if isinstance(array, DeviceArray):
        if array.device != "cpu":
            raise TypeError(
                f"argument '{buffer.name}' is in GPU memory, but this kernel runs on the cpu; "
                f"pass {buffer.name}.numpy() or build the kernel with target='cuda'"
            )
        return array.numpy()
    if isinstance(array, np.ndarray):
        return array
    device = device_of(array)
    if device is None:
        return array
    if device[0] not in HOST_DEVICES:
        raise TypeError(
            f"argument '{buffer.name}' is in {device_name(device[0])} memory, but this kernel "
            "runs on the cpu; copy it to the host or build the kernel with target='cuda'"
        )
    return host_array(buffer.name, array, buffer.dtype)


def _check_array(buffer, array: object, original: object, out: bool) -> None:
    """`array` (what `original` gave on the host) fits the parameter `buffer`, an output
    when `out`."""
    if not isinstance(array, np.ndarray):
        raise TypeError(
            f"argument '{buffer.name}' must be a numpy array (or a host array with __dlpack__), "
            f"got {type(array).__name__}"
        )
    if array.dtype != dt.to_numpy(buffer.dtype):
        raise dtype_error(buffer.name, buffer.dtype, array.dtype, original, out)
    if array.ndim != len(buffer.shape):
        raise ValueError(
            f"argument '{buffer.name}' must have {len(buffer.shape)} dimension(s), "
            f"got an array of shape {array.shape}"
        )


def named_sizes(func: LoweredFunc, sizes: Mapping[str, int]) -> dict[Var, int]:
    """`sizes` given by name (``n=100``) as values of `func`'s size variables; a TypeError
    names one `func` does not have."""
    by_name = {v.name: v for v in func.sizes}
    given = {}
    for name, value in sizes.items():
        if name not in by_name and any(b.name == name for b in func.params):
            order = ", ".join(b.name for b in func.params)
            raise TypeError(
                f"kernel '{func.name}' takes its arrays by position, in the order of args: "
                f"kernel({order}); '{name}' was passed by name (names are for the sizes no "
                "array shows)"
            )
        if name not in by_name:
            known = ", ".join(by_name) or "none"
            raise TypeError(f"kernel '{func.name}' has no size '{name}' (its sizes: {known})")
        integer = as_int(value)
        if integer is None:
            raise TypeError(
                f"size '{name}' of kernel '{func.name}' is {value!r}, not an integer; pass an "
                "int or a numpy integer"
            )
        given[by_name[name]] = integer
    return given


def _check_overlap(params, arrays, written) -> None:
    for k, (buffer, array, out) in enumerate(zip(params, arrays, written)):
        if not out:
            continue
        for other, other_array in zip(params[:k] + params[k + 1 :], arrays[:k] + arrays[k + 1 :]):
            if np.may_share_memory(array, other_array):
                raise ValueError(
                    f"argument '{buffer.name}' is an output that overlaps '{other.name}' in "
                    "memory; pass separate arrays (e.g. a copy)"
                )
