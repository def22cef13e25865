"""Checking the arrays a kernel is called with, before any machine code touches them.

Compiled code trusts its arguments completely (a wrong shape is a wild write), so everything is
checked here, in `args` order and with messages naming the parameter: the count, that each is a
numpy array of the parameter's dtype and rank, that shapes agree with each other through the
symbolic sizes, that every array is C-contiguous, that outputs are writable, and that no output
overlaps another argument (the generated code assumes its buffers do not alias).
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.evaluate import _bind_sizes
from ..ir.expr import Var
from ..loopir.nodes import LoweredFunc, Store
from ..loopir.visit import walk_stmt


def written_params(func: LoweredFunc) -> tuple[bool, ...]:
    """Per parameter, whether the kernel stores to it (an output)."""
    stored = {id(s.buffer) for s in walk_stmt(func.body) if isinstance(s, Store)}
    return tuple(id(b) in stored for b in func.params)


@dataclass(frozen=True)
class Call:
    """Checked arguments as the entry point takes them."""

    buffers: ctypes.Array
    sizes: ctypes.Array
    arrays: tuple[np.ndarray, ...]  # kept alive for the duration of the call


def check_arguments(
    func: LoweredFunc,
    written: Sequence[bool],
    arrays: Sequence[object],
    sizes: Mapping[str, int],
) -> Call:
    """Validate `arrays` (and `sizes` given by name) for `func`; raise ValueError/TypeError."""
    params = func.params
    if len(arrays) != len(params):
        names = ", ".join(b.name for b in params)
        raise TypeError(
            f"kernel '{func.name}' takes {len(params)} arrays ({names}), got {len(arrays)}"
        )
    for buffer, array in zip(params, arrays):
        _check_array(buffer, array)
    given = _named_sizes(func, sizes)
    bound = _bind_sizes(list(params), dict(zip(params, arrays)), given)
    values = []
    for v in func.sizes:
        if v not in bound:
            raise ValueError(
                f"size '{v.name}' of kernel '{func.name}' is not the size of any argument; "
                f"pass it by name: kernel(..., {v.name}=value)"
            )
        values.append(int(bound[v]))
    for buffer, array, out in zip(params, arrays, written):
        if not array.flags.c_contiguous:
            raise ValueError(
                f"argument '{buffer.name}' is not C-contiguous (strides {array.strides}); "
                f"pass np.ascontiguousarray({buffer.name})"
            )
        if out and not array.flags.writeable:
            raise ValueError(f"argument '{buffer.name}' is an output but its array is read-only")
    _check_overlap(params, arrays, written)
    buffers = (ctypes.c_void_p * max(1, len(arrays)))(*(a.ctypes.data for a in arrays))
    size_array = (ctypes.c_int64 * max(1, len(values)))(*values)
    return Call(buffers, size_array, tuple(arrays))


def _check_array(buffer, array: object) -> None:
    if not isinstance(array, np.ndarray):
        raise TypeError(
            f"argument '{buffer.name}' must be a numpy array, got {type(array).__name__}"
        )
    expected = dt.to_numpy(buffer.dtype)
    if array.dtype != expected:
        raise TypeError(
            f"argument '{buffer.name}' must have dtype {buffer.dtype}, got {array.dtype}: "
            f"convert it with .astype({expected.name!r})"
        )
    if array.ndim != len(buffer.shape):
        raise ValueError(
            f"argument '{buffer.name}' must have {len(buffer.shape)} dimension(s), "
            f"got an array of shape {array.shape}"
        )


def _named_sizes(func: LoweredFunc, sizes: Mapping[str, int]) -> dict[Var, int]:
    by_name = {v.name: v for v in func.sizes}
    given = {}
    for name, value in sizes.items():
        if name not in by_name:
            known = ", ".join(by_name) or "none"
            raise TypeError(f"kernel '{func.name}' has no size '{name}' (its sizes: {known})")
        given[by_name[name]] = int(value)
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
