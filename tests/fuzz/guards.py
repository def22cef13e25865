"""Arrays with guard zones: each argument is the middle of a larger flat buffer whose first and
last `PAD` elements hold a sentinel pattern, so a kernel that writes outside its arguments
changes a sentinel, and the check afterwards says where.

The window is C-contiguous (the CPU runtime refuses other outputs) and starts `PAD` elements
in, 256 bytes, which keeps the 16-byte alignment the CUDA runtime requires.
"""

from __future__ import annotations

import numpy as np

PAD = 64
# float32 NaNs with distinct payloads: no arithmetic result and no NaN poison has these bits
SENTINEL = (0x7FA00000 | (np.arange(PAD, dtype=np.uint32) * 0x9E37 & 0xFFFF)).astype(np.uint32)


class Guarded:
    """A float32 array of `shape` holding `fill` (NaN where None), between two guard zones."""

    def __init__(self, shape: tuple[int, ...], fill: np.ndarray | None = None) -> None:
        size = int(np.prod(shape, dtype=np.int64))
        self.flat = np.empty(PAD + size + PAD, np.float32)
        bits = self.flat.view(np.uint32)
        bits[:PAD] = SENTINEL
        bits[PAD + size :] = SENTINEL
        self.view = self.flat[PAD : PAD + size].reshape(shape)
        self.view[...] = np.nan if fill is None else fill
        self.initial = self.view.copy()

    def damage(self) -> str | None:
        """Where the guard zones changed, or None."""
        bits = self.flat.view(np.uint32)
        size = self.view.size
        before = np.flatnonzero(bits[:PAD] != SENTINEL)
        after = np.flatnonzero(bits[PAD + size :] != SENTINEL)
        if before.size == 0 and after.size == 0:
            return None
        return (
            f"written outside the array: elements {(before - PAD).tolist()} before its start "
            f"and {(after).tolist()} after its end (of {size})"
        )

    def changed(self) -> bool:
        """Whether the array itself differs from what it was filled with (NaN equals NaN)."""
        return not np.array_equal(self.view, self.initial, equal_nan=True)


class DeviceGuarded:
    """`Guarded`'s flat buffer copied to the GPU; `window` is the middle part as a kernel
    argument (``__cuda_array_interface__``) and `fetch` copies the whole buffer back."""

    def __init__(self, host: Guarded) -> None:
        import schedlang as sl

        self.host = host
        self.memory = sl.array(host.flat, device="cuda")
        self.window = _Window(self.memory.ptr + PAD * host.flat.itemsize, host.view.shape)

    def fetch(self) -> None:
        self.memory.copy_to_host(self.host.flat)


class _Window:
    def __init__(self, ptr: int, shape: tuple[int, ...]) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": "<f4",
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }
