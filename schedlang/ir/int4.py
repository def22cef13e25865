"""Packed int4 weights, the layout of weight-only quantised LLMs (AWQ, GPTQ, torchao's
uint4): two 4-bit values in a byte, scaled per group of rows.

A weight W of shape (K, N) is stored as

- ``packed``: uint8 of shape (K // 2, N); byte ``packed[k // 2, n]`` holds ``W``'s row k in its
  **low nibble when k is even** and in its high nibble when k is odd (the order of torch's and
  AWQ's packers, which write ``lo | hi << 4``);
- ``scales`` and ``zeros`` of shape (K // group, N), in the dtype of the activations: row k
  belongs to group ``k // group``.

Each value is unsigned, 0..15, and the weight is ``(q - zero) * scale``. Nothing here is a new
kind of expression: unpacking is integer arithmetic (a shift and a mask) that the reference
evaluates exactly and every target compiles as it is, so the dequantising definition is plain
`compute` code that `sl.lower` prints.

The layout needs an even K (a byte holds two rows) and a group that divides K (every group
full); `packed_int4` refuses any other when the algorithm is defined, since by the time a kernel
runs, an odd row would be a read past the packed tensor.
"""

from __future__ import annotations

from ..errors import AlgorithmError, entry_point
from . import dtype as dt
from .expr import Cast, Const, Expr, as_expr, binary
from .integers import as_int
from .tensor import Tensor, placeholder


@entry_point
def unpack_int4(byte: object, which: object) -> Expr:
    """The 4-bit value, 0..15 as an int32, in nibble `which` (0: low, 1: high) of the uint8
    `byte`: ``(int32(byte) >> 4 * which) & 15``. Row k of a packed weight is
    ``unpack_int4(packed[k // 2, n], k % 2)``."""
    value = as_expr(byte)
    if value.dtype != "uint8":
        raise AlgorithmError(
            f"unpack_int4 takes a byte of two packed int4 values, a uint8, but '{value}' is "
            f"{value.dtype}; store the packed weight as a uint8 tensor (sl.packed_int4 makes one)"
        )
    nibble = as_expr(which)
    if not dt.is_int(nibble.dtype):
        raise AlgorithmError(
            f"unpack_int4's nibble '{nibble}' is {nibble.dtype}; give 0 (low), 1 (high) or an "
            "integer expression such as k % 2"
        )
    if isinstance(nibble, Const) and nibble.value not in (0, 1):
        raise AlgorithmError(
            f"unpack_int4's nibble is {nibble.value}, but a byte has two: 0 (low) or 1 (high)"
        )
    shifted = binary(">>", Cast(value, "int32"), binary("*", 4, nibble))
    return binary("&", shifted, 15)


@entry_point
def packed_int4(
    shape: object, group: object, dtype: object = "float16", name: str = "W"
) -> tuple[Tensor, Tensor, Tensor]:
    """``(packed, scales, zeros)``: the placeholders of an int4 weight of `shape` (K, N) in
    groups of `group` rows (module docstring): ``{name}q`` uint8 (K // 2, N), ``{name}_scale``
    and ``{name}_zero`` of `dtype`, (K // group, N). K must be an even int and `group` a
    divisor of it; N may be a size variable."""
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise AlgorithmError(
            f"packed_int4 '{name}': shape must be (K, N), the unpacked weight's, not {shape!r}"
        )
    k, n = shape
    rows = as_int(k)
    if rows is None:
        raise AlgorithmError(
            f"packed_int4 '{name}': K must be an int, not {_shown(k)}: the packing and the groups "
            "depend on its value (a weight's K is fixed; N and the activations' rows may be "
            "size variables)"
        )
    if rows <= 0 or rows % 2:
        raise AlgorithmError(
            f"packed_int4 '{name}': K = {rows} is odd, but a byte holds the int4 values of two "
            "rows (k = 2j in its low nibble, 2j + 1 in its high); pad the weight with a zero "
            "row to an even K (and the activations with a zero column)"
        )
    size = as_int(group)
    if size is None or size <= 0:
        raise AlgorithmError(
            f"packed_int4 '{name}': group must be a positive int (rows per scale), not "
            f"{_shown(group)}"
        )
    if rows % size:
        raise AlgorithmError(
            f"packed_int4 '{name}': group {size} does not divide K = {rows}, which would leave "
            f"a last group of {rows % size} rows; pick a group that divides K (e.g. 32 or "
            "128) or pad K to a multiple of it"
        )
    scale_dtype = dt.canonical(dtype)
    if not dt.is_float(scale_dtype):
        raise AlgorithmError(
            f"packed_int4 '{name}': scales and zeros are floats (the activations' dtype), "
            f"not {scale_dtype}"
        )
    packed = placeholder((rows // 2, n), "uint8", name=f"{name}q")
    scales = placeholder((rows // size, n), scale_dtype, name=f"{name}_scale")
    zeros = placeholder((rows // size, n), scale_dtype, name=f"{name}_zero")
    return packed, scales, zeros


def _shown(value: object) -> str:
    """`value` as a message shows it: an expression as its text, anything else as its repr."""
    return f"'{value}'" if isinstance(value, Expr) else repr(value)
