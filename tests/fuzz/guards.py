"""Arrays with guard zones: each argument is the middle of a larger flat buffer whose first and
last `PAD_BYTES` hold a sentinel pattern, so a kernel that writes outside its arguments changes
a sentinel, and the check afterwards says where.

The window is C-contiguous (the CPU runtime refuses other outputs) and starts `PAD_BYTES` (256)
in, which keeps the 16-byte alignment the CUDA runtime, vector loads and ``cp.async`` require.
Elements of 4 bytes (float32) and of 2 bytes (float16, bfloat16: the tensor cores' operands)
are guarded, each by NaNs of its width whose payloads no arithmetic result nor NaN poison has;
bytes (packed int4 weights, only ever inputs) by a pattern of bytes, which a stray byte store
can match by chance where a wider one cannot.
"""

from __future__ import annotations

import numpy as np

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.runtime.device_array import DeviceArray

PAD_BYTES = 256
PAD = PAD_BYTES // 4  # guard elements of a float32 array
# float32 NaNs with distinct payloads: no arithmetic result and no NaN poison has these bits
SENTINEL = (0x7FA00000 | (np.arange(PAD, dtype=np.uint32) * 0x9E37 & 0xFFFF)).astype(np.uint32)
# 16-bit NaNs in both float16 and bfloat16 (0x7F81..0x7FBF), never the canonical NaN of either
# (0x7E00, 0x7FC0), so NaN poison written one element too far is still seen
SENTINEL16 = (0x7F80 | (1 + np.arange(PAD_BYTES // 2) * 37 % 63)).astype(np.uint16)
SENTINEL8 = (np.arange(PAD_BYTES) * 37 + 11 & 0xFF).astype(np.uint8)
_SENTINELS = {4: SENTINEL, 2: SENTINEL16, 1: SENTINEL8}


class Guarded:
    """An array of `shape` and `dtype` holding `fill` (NaN where None), between two guard zones
    of `PAD_BYTES` each."""

    def __init__(
        self, shape: tuple[int, ...], fill: np.ndarray | None = None, dtype: str = "float32"
    ) -> None:
        self.dtype = dt.to_numpy(dtype)
        self.sentinel = _SENTINELS[self.dtype.itemsize]
        self.pad = PAD_BYTES // self.dtype.itemsize
        size = int(np.prod(shape, dtype=np.int64))
        self.flat = np.empty(self.pad + size + self.pad, self.dtype)
        bits = self._bits()
        bits[: self.pad] = self.sentinel
        bits[self.pad + size :] = self.sentinel
        self.view = self.flat[self.pad : self.pad + size].reshape(shape)
        self.view[...] = np.nan if fill is None else fill
        self.initial = self.view.copy()

    def _bits(self) -> np.ndarray:
        return self.flat.view(self.sentinel.dtype)

    def damage(self) -> str | None:
        """Where the guard zones changed, or None."""
        bits = self._bits()
        size = self.view.size
        before = np.flatnonzero(bits[: self.pad] != self.sentinel)
        after = np.flatnonzero(bits[self.pad + size :] != self.sentinel)
        if before.size == 0 and after.size == 0:
            return None
        return (
            f"written outside the array: elements {(before - self.pad).tolist()} before its "
            f"start and {(after).tolist()} after its end (of {size})"
        )

    def changed(self) -> bool:
        """Whether the array itself differs from what it was filled with, bit for bit (so NaN
        equals the same NaN)."""
        kind = self.sentinel.dtype
        return not np.array_equal(self.view.view(kind), self.initial.view(kind))


class DeviceGuarded:
    """`Guarded`'s flat buffer copied to the GPU; `window` is the middle part as a kernel
    argument and `fetch` copies the whole buffer back. The window is named through
    ``__cuda_array_interface__`` as torch and cupy tensors are, except for bfloat16, which the
    interface cannot name ("<V2", raw bytes): that window is a `DeviceArray` over the buffer."""

    def __init__(self, host: Guarded) -> None:
        self.host = host
        self.memory = sl.array(host.flat, device="cuda")
        ptr = self.memory.ptr + PAD_BYTES
        if host.dtype.name == "bfloat16":
            self.window = _WindowArray(ptr, host.view.shape, host.dtype)
        else:
            self.window = _Window(ptr, host.view.shape, host.dtype.str)

    def fetch(self) -> None:
        self.memory.copy_to_host(self.host.flat)


class _Window:
    def __init__(self, ptr: int, shape: tuple[int, ...], typestr: str = "<f4") -> None:
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }


class _WindowArray(DeviceArray):
    """A view of memory that another DeviceArray owns: it allocates nothing, frees nothing."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self._host = None
        self.ptr = ptr
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = "cuda"
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * dtype.itemsize

    def __del__(self) -> None:  # the owner frees the memory
        pass
