"""Inputs that exercise conversions to the 8-bit floats, and an oracle for them that shares
no code with `dt.to_float8`: the nearest representable value found by search."""

from __future__ import annotations

import numpy as np

from schedlang.ir import dtype as dt

NAN_BITS = (0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345, 0x7FFFFFFF)


def codes(dtype: str) -> np.ndarray:
    """All 256 values of `dtype`, in code order."""
    return np.arange(256, dtype=np.uint8).view(dt.to_numpy(dtype))


def finite_values(dtype: str) -> np.ndarray:
    """The finite values of `dtype`, ascending, as float64 (one zero, +0: which zero
    `np.unique` keeps depends on numpy's version)."""
    wide = codes(dtype).astype(np.float64)
    return np.unique(wide[np.isfinite(wide)]) + 0.0


def float32_sweep(dtype: str) -> np.ndarray:
    """Float32 inputs for conversions to `dtype`: every value, every midpoint between
    neighbours (the ties) and the floats on either side of it, the saturation boundary, float32
    subnormals, infinities, NaNs with payloads, and a dense stride through all bit patterns."""
    exact = finite_values(dtype).astype(np.float32)
    top = np.float32(dt.max_value(dtype))
    step = top - exact[-2]
    beyond = np.array([top + step / 2, top + step, 2 * top, 1e30, np.inf], np.float32)
    points = np.concatenate([exact, beyond])
    ties = ((points[:-1].astype(np.float64) + points[1:]) / 2).astype(np.float32)
    near = [np.nextafter(ties, np.float32(np.inf)), np.nextafter(ties, np.float32(-np.inf))]
    tiny = np.array([1e-45, 1e-40, 1.1754942e-38, 1.17549435e-38], np.float32)
    nans = np.array(NAN_BITS, np.uint32).view(np.float32)
    stride = np.arange(0, 1 << 32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    magnitudes = np.concatenate([points, ties, *near, tiny])
    return np.concatenate([magnitudes, -magnitudes, nans, stride])


def nearest_even(values: np.ndarray, dtype: str) -> np.ndarray:
    """The bytes PTX's ``cvt.rn.satfinite`` gives for `values`: the nearest value of `dtype`
    to each (clamped to the finite range first), the one with an even code on a tie; NaN
    gives 0x7F. Found by search over the sorted values, not by bit manipulation."""
    with np.errstate(invalid="ignore"):  # NaNs with payloads
        x = np.asarray(values, np.float64)
    grid = finite_values(dtype)
    top = grid[-1]
    clamped = np.clip(np.nan_to_num(x, nan=0.0, posinf=top, neginf=-top), -top, top)
    above = np.clip(np.searchsorted(grid, clamped), 1, len(grid) - 1)
    low, high = grid[above - 1], grid[above]
    low_code = _code_of(low, dtype)
    pick_high = (high - clamped < clamped - low) | (
        (high - clamped == clamped - low) & (low_code % 2 == 1)
    )
    chosen = np.where(pick_high, high, low)
    out = _code_of(chosen, dtype)
    negative_zero = (chosen == 0) & np.signbit(x)
    out = np.where(negative_zero, 0x80, out)
    return np.where(np.isnan(x), dt.NAN8, out).astype(np.uint8)


def _code_of(values: np.ndarray, dtype: str) -> np.ndarray:
    """The byte of each value of `dtype` (exact values; +0 for zero)."""
    return np.asarray(values).astype(dt.to_numpy(dtype)).view(np.uint8).astype(np.int64)
