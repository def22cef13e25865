"""OpenCL C types and literals for the loop IR's dtypes.

Every dtype has a *compute* type, what a private variable of it holds, and a *storage* type,
what its elements are in a global buffer. They differ for 16-bit floats, which OpenCL C 1.2
computes in float (``half`` needs ``cl_khr_fp16``, which many devices lack): a float16 buffer
is read with ``vload_half`` and written with ``vstore_half_rte``, a bfloat16 buffer is one of
``ushort`` bits, and either computes in float rounded after each operation, as the reference
does, so a value of these types always fits them exactly. Booleans are bytes in memory, as
numpy's are.
"""

from __future__ import annotations

import math

from ...errors import LoweringError

_COMPUTE = {
    "bool": "bool",
    "int8": "char",
    "int16": "short",
    "int32": "int",
    "int64": "long",
    "uint8": "uchar",
    "uint32": "uint",
    "float16": "float",
    "bfloat16": "float",
    "float32": "float",
    "float64": "double",
}
_STORAGE = {**_COMPUTE, "bool": "uchar", "float16": "half", "bfloat16": "ushort"}
NARROW_INTS = ("int8", "int16", "uint8")  # C computes them in int: cast back
_INT_SUFFIX = {"int64": "L", "uint32": "u"}


def compute_type(dtype: str) -> str:
    """The C type a value of `dtype` is computed in."""
    if dtype not in _COMPUTE:
        raise LoweringError(
            f"the opencl target has no {dtype} type; compute it in float16 or float32, or build "
            "for 'cuda'"
        )
    return _COMPUTE[dtype]


def storage_type(dtype: str) -> str:
    """The C type of an element of a global buffer of `dtype`."""
    compute_type(dtype)
    return _STORAGE[dtype]


def literal(value: object, dtype: str) -> str:
    """`value` as a C literal of `dtype`'s compute type, exactly."""
    if dtype == "bool":
        return "true" if value else "false"
    if dtype in ("float32", "float16", "bfloat16", "float64"):
        return _float_literal(float(value), "" if dtype == "float64" else "f")
    n = int(value)
    if dtype == "int32" and n == -(2**31):
        return "(-2147483647 - 1)"
    if dtype == "int64" and n == -(2**63):
        return "(-9223372036854775807L - 1L)"
    text = f"{n}{_INT_SUFFIX.get(dtype, '')}"
    return text if dtype not in NARROW_INTS else f"(({compute_type(dtype)}){text})"


def _float_literal(x: float, suffix: str) -> str:
    if math.isnan(x):
        return "NAN" if suffix else "((double)NAN)"
    if math.isinf(x):
        sign = "-" if x < 0 else ""
        return f"{sign}INFINITY" if suffix else f"({sign}(double)INFINITY)"
    text = repr(x)  # the shortest decimal that reads back as this double, and so as the float
    if "e" not in text and "." not in text:
        text += ".0"
    return f"{text}{suffix}"
