"""Which CUDA stream a call's kernels are queued on, and whether the call waits for them.

A kernel runs where the caller's work runs: ``kernel(..., stream=s)`` on `s` (a raw handle, a
torch or cupy stream, or any object with ``__cuda_stream__``); otherwise on torch's current
stream when an argument is a torch tensor, on cupy's when one is a cupy array, and on CUDA's
legacy default stream for numpy and ``sl`` arrays. Queued on a caller's stream, the call
returns at once, as a torch or cupy operation does (a fault surfaces at the next
synchronisation); on the legacy stream, and wherever an output is a host array that must be
copied back, it waits, so that the error, and the result, are there when it returns.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence


def stream_handle(stream: object) -> int:
    """The raw ``CUstream`` of `stream`; TypeError for something that is not one."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    for attribute in ("cuda_stream", "ptr", "handle"):  # torch, cupy, cuda.core
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value
    raise TypeError(
        f"stream= takes a CUDA stream (an int handle, a torch or cupy stream, or an object with "
        f"__cuda_stream__), got {type(stream).__name__}"
    )


def torch_stream(torch) -> Callable[[int], int]:
    """torch's current stream of a device as a raw handle: its C getter (0.15 us) where torch
    has it, else the public API (8 us a call)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda ordinal: torch.cuda.current_stream(ordinal).cuda_stream


def callers_stream(arrays: Sequence[object], ordinal: int) -> int | None:
    """The current stream of the library whose arrays these are (torch first, then cupy), or
    None where none is (numpy and ``sl`` arrays: the legacy default stream)."""
    torch = sys.modules.get("torch")
    if torch is not None and any(isinstance(a, torch.Tensor) for a in arrays):
        return int(torch_stream(torch)(ordinal))
    cupy = sys.modules.get("cupy")
    if cupy is not None and any(isinstance(a, cupy.ndarray) for a in arrays):
        return int(cupy.cuda.get_current_stream().ptr)
    return None
