"""Tensor maps for the copy engine: made at each call from the arrays passed.

A bulk copy (`codegen.nvptx.bulk_copy`) reads a global tensor through a 128-byte descriptor of
its address, sizes and strides, which only exist at a call: `encode` makes one per `TensorMap`
of the plan with ``cuTensorMapEncodeTiled``, for the array passed in that parameter's place.
The copy engine reads rows whose byte strides are multiples of 16 from an address that is
one, so a tensor whose rows are not (a float16 matrix of odd width) is a `LaunchError` naming
it before anything runs, instead of the driver's ``CUDA_ERROR_INVALID_VALUE``. Elements of a
box outside the tensor arrive as zeros.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

from ..codegen.nvptx.bulk_copy import MAP_ALIGN, MAP_BYTES, TensorMap
from ..codegen.nvptx.plan import DevicePlan
from ..errors import LaunchError
from ..ir import dtype as dt
from ..ir.evaluate import _size_value
from .cuda import driver

_TYPES = {
    "float16": "FLOAT16",
    "bfloat16": "BFLOAT16",
    "float32": "FLOAT32",
    "float64": "FLOAT64",
    "int32": "INT32",
    "int64": "INT64",
    "uint8": "UINT8",
    "float8_e4m3fn": "UINT8",  # the copy engine moves bytes: 8-bit floats as uint8
    "float8_e5m2": "UINT8",
    "uint32": "UINT32",
}
_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}


class MapBytes(ctypes.Structure):
    """A tensor map's 128 bytes, aligned as the driver and the kernel parameter need."""

    _fields_ = [("bytes", ctypes.c_uint8 * MAP_BYTES)]
    _align_ = MAP_ALIGN


def encode(plan: DevicePlan, pointers: Sequence[int], sizes: Sequence[int]) -> list[MapBytes]:
    """The plan's tensor maps for a call on `pointers` (the plan's buffers) and `sizes`."""
    bound = dict(zip(plan.func.sizes, sizes))
    return [_encode(m, plan, pointers, bound) for m in plan.tensor_maps]


def _encode(m: TensorMap, plan: DevicePlan, pointers: Sequence[int], bound: dict) -> MapBytes:
    cuda = driver.driver()
    buffer = plan.buffers[m.param]
    item = dt.itemsize(m.dtype)
    shape = [int(_size_value(e, bound)) for e in buffer.shape]
    dims = list(reversed(shape))  # innermost first, as the copy engine counts them
    strides = []
    step = item
    for n in dims[:-1]:
        step *= n
        strides.append(step)
    bad = [s for s in strides if s % 16]
    if bad or pointers[m.param] % 16:
        raise LaunchError(
            f"'{buffer.name}' is {m.verb} by the copy engine ({m.asked_by}), which needs rows "
            f"whose lengths are multiples of 16 bytes, but its shape {tuple(shape)} of "
            f"{buffer.dtype} has rows of {dims[0] * item} bytes; pad its last dimension to a "
            f"multiple of {16 // item} elements, or use {m.asked_by.split('(')[0]} without tma"
        )
    if min(dims) <= 0:
        dims = [max(1, n) for n in dims]  # an empty tensor: no copy runs, the map must exist
    kind = getattr(cuda.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{_TYPES[m.dtype]}")
    swizzle = getattr(cuda.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[m.swizzle]}")
    made = driver.check(
        cuda.cuTensorMapEncodeTiled(
            kind,
            len(dims),
            pointers[m.param],
            [cuda.cuuint64_t(n) for n in dims],
            [cuda.cuuint64_t(n) for n in strides],
            [cuda.cuuint32_t(n) for n in m.box],
            [cuda.cuuint32_t(1)] * len(dims),
            cuda.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            cuda.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            cuda.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        ),
        f"making the tensor map of '{buffer.name}' for the copy engine",
    )
    out = MapBytes()
    ctypes.memmove(out.bytes, made.getPtr(), MAP_BYTES)
    return out
