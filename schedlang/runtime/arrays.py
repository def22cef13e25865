"""Host arrays laid out for vector code.

numpy aligns data to 16 bytes, so a row of a float32 matrix may start in the middle of a cache
line and every 64-byte vector load of it straddle two lines. Arrays from `aligned_empty` start on
a cache line (64 bytes, the width of an AVX-512 register).
"""

from __future__ import annotations

import numpy as np

from ..ir import dtype as dt

ALIGNMENT = 64


def aligned_empty(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary."""
    np_dtype = dt.to_numpy(dt.canonical(dtype))
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * np_dtype.itemsize + ALIGNMENT, np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start : start + count * np_dtype.itemsize].view(np_dtype).reshape(shape)


def aligned_copy(array: np.ndarray) -> np.ndarray:
    """`array` copied into an `aligned_empty` array."""
    out = aligned_empty(array.shape, array.dtype)
    out[...] = array
    return out
