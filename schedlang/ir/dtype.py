"""Data types and the rules that combine them.

A dtype is its canonical name (a `str` such as ``"float32"``): cheap to compare, hash and print.

Promotion, for a binary operation between two expressions (numpy's rules where they are sane,
TE's where numpy widens to float64 for no reason):

- equal dtypes stay as they are;
- ``bool`` with anything else gives the other dtype (``True`` counts as 1);
- an integer with a float gives the float;
- two floats give the wider one; ``float16`` with ``bfloat16`` gives ``float32``; an 8-bit float
  with a 16-, 32- or 64-bit float gives the wider one, so ``a.astype("float32") * b`` for fp8 ``b``
  is a float32 product, as in Transformer Engine;
- ``float8_e4m3fn`` with ``float8_e5m2`` has no common dtype (numpy with ml_dtypes and JAX refuse
  it too): an `AlgorithmError` asks for an explicit ``astype`` (``float16`` holds both exactly);
- two signed (or two unsigned) integers give the wider one;
- a signed with an unsigned integer gives the smallest signed type that holds both
  (``uint8`` with ``int8`` gives ``int16``, ``uint32`` with ``int32`` gives ``int64``).

A Python scalar mixed with an expression takes the expression's dtype (``x + 1`` keeps ``x``'s
dtype, ``x * 0.5`` for a float ``x`` keeps it too), except that a Python ``float`` with an integer
expression gives ``float32`` (TE's default float), and a Python ``int`` with a ``bool`` expression
gives ``int32``.

The 8-bit floats ``float8_e4m3fn`` (4 exponent bits, 3 mantissa bits, largest 448, no
infinities) and ``float8_e5m2`` (largest 57344) are computed in float32, as float16 is, and
rounded back after every operation. Every conversion to them (`to_float8`) is PTX's
``cvt.rn.satfinite``: round to nearest even, finite values and infinities past the largest
finite value saturate to it with their sign, and NaN becomes the NaN ``0x7F``.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import AlgorithmError

FLOAT8 = ("float8_e4m3fn", "float8_e5m2")
FLOATS = (*FLOAT8, "float16", "bfloat16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint32")
ALL = ("bool", *SIGNED, *UNSIGNED, *FLOATS)
_INTS = frozenset(SIGNED + UNSIGNED)  # `is_int` asks this for every index it meets

_BITS = {
    "bool": 1,
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": 64,
    "uint8": 8,
    "uint32": 32,
    "float8_e4m3fn": 8,
    "float8_e5m2": 8,
    "float16": 16,
    "bfloat16": 16,
    "float32": 32,
    "float64": 64,
}


def canonical(dtype: object) -> str:
    """The canonical name of `dtype` (a name, a numpy dtype or a Python type)."""
    if isinstance(dtype, str) and dtype in _BITS:
        return dtype
    aliases = {bool: "bool", int: "int32", float: "float32", "float": "float32", "int": "int32"}
    aliases.update({"e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2"})  # TVM's
    if isinstance(dtype, (type, str)) and dtype in aliases:
        return aliases[dtype]
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = str(dtype)
    if name not in _BITS:
        raise AlgorithmError(f"unsupported dtype {dtype!r}; schedlang supports {', '.join(ALL)}")
    return name


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def is_int(dtype: str) -> bool:
    """True for signed and unsigned integers (not bool)."""
    return dtype in _INTS


def is_bool(dtype: str) -> bool:
    return dtype == "bool"


def bits(dtype: str) -> int:
    return _BITS[dtype]


def itemsize(dtype: str) -> int:
    """Bytes per element in memory (a bool takes one byte)."""
    return max(1, _BITS[dtype] // 8)


def is_float8(dtype: str) -> bool:
    return dtype in FLOAT8


def to_numpy(dtype: str) -> np.dtype:
    """The numpy dtype that stores `dtype` (``bfloat16`` and the 8-bit floats through
    ml_dtypes)."""
    if dtype == "bfloat16" or dtype in FLOAT8:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, dtype))
    return np.dtype(dtype)


NAN8 = 0x7F  # the NaN that every conversion to an 8-bit float gives (PTX's ``cvt`` gives it)


def to_float8(values: object, dtype: str) -> np.ndarray | np.generic:
    """Numbers converted to the 8-bit float `dtype` as PTX's ``cvt.rn.satfinite`` converts
    them, which the CPU target reproduces bit for bit: round to nearest even; a value (an
    infinity too) past the largest finite one saturates to it with its sign; NaN becomes
    `NAN8`. ml_dtypes' own ``astype`` gives NaN (e4m3fn) or infinity (e5m2) past the range and
    keeps the sign of a NaN, so the values are clipped first and NaNs set after.
    A 0-d input gives a numpy scalar, as a ufunc does."""
    array = np.asarray(values)
    if array.dtype == np.float64:
        array = _round_to_odd(array)
    elif array.dtype.kind in "biu" or array.dtype.itemsize < 4:  # exact, or saturates anyway
        array = array.astype(np.float32)
    limit = max_value(dtype)
    with np.errstate(invalid="ignore"):
        out = np.asarray(np.clip(array, -limit, limit).astype(to_numpy(dtype)))
    np.copyto(out.view(np.uint8), np.uint8(NAN8), where=np.isnan(array))
    return out[()]


def _round_to_odd(values: np.ndarray) -> np.ndarray:
    """Doubles as floats rounded to odd (toward zero, the last bit set where inexact), from
    which rounding to 8 bits is correct: ml_dtypes rounds a double to float first and then
    again, which moves values just past a tie onto it."""
    with np.errstate(over="ignore", invalid="ignore"):
        nearest = values.astype(np.float32)
        away = np.abs(nearest.astype(np.float64)) > np.abs(values)
        bits = nearest.view(np.uint32) - away.astype(np.uint32)
        inexact = nearest.astype(np.float64) != values
    bits = np.where(inexact & ~np.isnan(values), bits | 1, nearest.view(np.uint32))
    return bits.astype(np.uint32).view(np.float32)


def convert(values: object, dtype: str) -> np.ndarray | np.generic:
    """Numbers converted to `dtype` as every target converts them: numpy's ``astype``, but
    saturating from floats into integers (`float_to_int`) and into 8-bit floats
    (`to_float8`). A 0-d input gives a numpy scalar."""
    array = np.asarray(values)
    if array.dtype == to_numpy(dtype):
        return array[()]
    if dtype in FLOAT8:
        return to_float8(array, dtype)
    if is_int(dtype) and array.dtype.kind in "fV":  # "V": bfloat16 and the 8-bit floats
        return float_to_int(array, dtype)
    return array.astype(to_numpy(dtype))[()]


def promote(a: str, b: str) -> str:
    """The dtype of a binary arithmetic operation on `a` and `b` (rules in the module doc)."""
    if a == b:
        return a
    if a == "bool":
        return b
    if b == "bool":
        return a
    if is_float(a) and is_float(b):
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        if a in FLOAT8 and b in FLOAT8:
            raise AlgorithmError(
                f"{a} and {b} have no common dtype; convert one of them first, e.g. with "
                ".astype('float16'), which holds every value of both exactly"
            )
        return a if _BITS[a] > _BITS[b] else b
    if is_float(a):
        return a
    if is_float(b):
        return b
    a_signed, b_signed = a in SIGNED, b in SIGNED
    if a_signed == b_signed:
        return a if _BITS[a] > _BITS[b] else b
    signed, unsigned = (a, b) if a_signed else (b, a)
    if _BITS[signed] > _BITS[unsigned]:
        return signed
    wider = min(64, 2 * _BITS[unsigned])
    return f"int{wider}"


def scalar_dtype(value: object, other: str) -> str:
    """The dtype a Python scalar takes next to an expression of dtype `other`."""
    if isinstance(value, bool):
        return "bool" if other == "bool" else other
    if isinstance(value, int):
        return "int32" if other == "bool" else other
    if isinstance(value, float):
        return other if is_float(other) else "float32"
    raise AlgorithmError(f"cannot use {value!r} of type {type(value).__name__} in an expression")


def default_dtype(value: object) -> str:
    """The dtype of a Python scalar that stands alone (``sl.const(3)``)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int32" if -(2**31) <= value < 2**31 else "int64"
    if isinstance(value, float):
        return "float32"
    raise AlgorithmError(f"cannot use {value!r} of type {type(value).__name__} in an expression")


@functools.cache
def max_value(dtype: str) -> int | float:
    if dtype == "bool":
        return True
    if is_float(dtype):
        import ml_dtypes

        return float(ml_dtypes.finfo(to_numpy(dtype)).max)
    return int(np.iinfo(np.dtype(dtype)).max)


@functools.cache
def min_value(dtype: str) -> int | float:
    if dtype == "bool":
        return False
    if is_float(dtype):
        return -max_value(dtype)
    return int(np.iinfo(np.dtype(dtype)).min)


def float_to_int(values: object, dtype: str) -> np.ndarray | np.generic:
    """Floats converted to the integer `dtype` as every target converts them: toward zero,
    saturated at the limits of `dtype` (so negatives give 0 for an unsigned type), and NaN to 0.
    That is LLVM's ``llvm.fptosi.sat`` and PTX's ``cvt.rzi``; numpy's own ``astype`` leaves
    values out of range undefined (INT_MIN on x86, and int8 wraps through int32).
    A 0-d input gives a numpy scalar, as a ufunc does."""
    exact = np.trunc(np.asarray(values).astype(np.float64))  # every float dtype fits in float64
    lo, hi = min_value(dtype), max_value(dtype)
    above = exact >= float(hi + 1)  # a power of two, so exact where float(hi) is not
    below = exact < float(lo)
    unsafe = above | below | np.isnan(exact)
    out = np.where(unsafe, 0.0, exact).astype(to_numpy(dtype))
    out[above] = hi
    out[below] = lo
    return out[()]


def constant_to_int(value: float, source: str, target: str) -> int:
    """A float constant of dtype `source` converted to the integer `target` as `float_to_int`
    converts values, after rounding it to `source` as a kernel stores it."""
    with np.errstate(over="ignore"):
        stored = to_numpy(source).type(value)
    return int(float_to_int(stored, target))
