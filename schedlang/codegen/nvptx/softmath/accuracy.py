"""Errors in ulps: how the soft math library is measured (``benchmarks/ulp.py``) and tested.

The error of a result is ``|result - exact| / ulp(exact)``, where ``ulp(v)`` is the spacing of
the result's type at the exact value ``v`` (constant through the subnormals), and the exact
value comes from a wider type (`reference`). Where the exact value is not a finite number of
the result's type (NaN, an infinity, or beyond the largest finite value) or is exactly zero,
anything but the same value (NaN for NaN, the same infinity, the same sign of zero) counts as
an infinite error.

References: numpy's float64 functions (scipy's erf) for float32 results, within an ulp of
double and so within 2**-29 float ulps of exact; for float64 results numpy's long double
functions (the C library's; on x86-64 the x87 format, 11 bits wider than double) and, for erf,
`erf_long`. These are measuring instruments, not part of code generation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def ulp_error(result: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Per-element errors of `result` (float32 or float64) against `exact` (float64 or
    longdouble, at least 11 bits wider)."""
    info = np.finfo(result.dtype)
    wide = exact.dtype.type
    with np.errstate(invalid="ignore", over="ignore"):
        rounded = exact.astype(result.dtype)
        _, exponent = np.frexp(np.where(np.isfinite(exact), exact, 1))
        exponent = np.maximum(exponent.astype(np.int64), int(info.minexp) + 1)  # subnormals
        ulp = np.ldexp(np.ones_like(exact), exponent - info.nmant - 1)
        error = np.abs(result.astype(wide) - exact) / ulp
    same = (result == rounded) & (np.signbit(result) == np.signbit(rounded))
    same |= np.isnan(result) & np.isnan(rounded)
    strict = ~np.isfinite(rounded) | (exact == 0)
    error = np.where(strict, np.where(same, 0.0, np.inf), error)
    return np.where(np.isnan(error), np.inf, error).astype(np.float64)


def reference(name: str, dtype: str) -> Callable[..., np.ndarray]:
    """The exact-enough `name` for results of `dtype`, as a function of numpy arrays."""
    if dtype == "float32":
        if name == "erf":
            import scipy.special

            return lambda x: scipy.special.erf(x.astype(np.float64))
        fn = np.power if name == "pow" else getattr(np, name)
        return lambda *args: fn(*(a.astype(np.float64) for a in args))
    if np.finfo(np.longdouble).nmant < 63:
        raise RuntimeError("float64 references need an 80-bit long double (x86-64)")
    if name == "erf":
        return erf_long
    fn = np.power if name == "pow" else getattr(np, name)
    return lambda *args: fn(*(a.astype(np.longdouble) for a in args))


def erf_long(x: np.ndarray) -> np.ndarray:
    """erf in long double from ``2/sqrt(pi) exp(-x**2) sum 2**n x**(2n+1) / (2n+1)!!``, a
    series of positive terms (no cancellation); erf rounds to +-1 in long double from 7 on."""
    x = x.astype(np.longdouble)
    a = np.minimum(np.abs(x), np.longdouble(7))
    a2 = a * a
    term = a.copy()
    total = a.copy()
    for n in range(1, 400):
        term *= 2 * a2 / (2 * n + 1)
        total += term
    two_over_sqrt_pi = np.longdouble("1.12837916709551257389615890312154517")
    with np.errstate(invalid="ignore"):
        value = two_over_sqrt_pi * np.exp(-a2) * total
    value = np.where(np.abs(x) >= 7, np.longdouble(1), value)
    return np.where(np.isnan(x), x, np.copysign(value, x))
