"""DLPack's C side, as the exporter (`exporter`) and the importer (`importer`) both see it.

A DLPack capsule is a PyCapsule named ``"dltensor"`` around a ``DLManagedTensor`` (dlpack.h,
the unversioned struct every producer can hand out): the tensor (data pointer, device, rank,
element type, shape, strides in elements or NULL for C-contiguous, byte offset of the first
element), the producer's context and the deleter that frees it. A consumer that takes the
tensor renames the capsule ``"used_dltensor"``, so that the capsule's destructor leaves it
alone, and calls the deleter when done.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ...ir import dtype as dt

# DLDeviceType
KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_ROCM, KDL_ROCM_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 10, 11, 13
HOST_DEVICES = (KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST, KDL_CUDA_MANAGED)  # numpy reads these
DEVICE_NAMES = {
    KDL_CPU: "host",
    KDL_CUDA: "CUDA GPU",
    KDL_CUDA_HOST: "CUDA pinned host",
    4: "OpenCL",
    7: "Vulkan",
    8: "Metal",
    9: "VPI",
    KDL_ROCM: "ROCm GPU",
    KDL_ROCM_HOST: "ROCm pinned host",
    12: "extension device",
    KDL_CUDA_MANAGED: "CUDA managed",
    14: "oneAPI",
    15: "WebGPU",
    16: "Hexagon",
    17: "MAIA",
}

# DLDataTypeCode
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # kDLInt, kDLUInt, kDLFloat, kDLBool
_KINDS = {code: kind for kind, code in _CODES.items()}
KDL_BFLOAT = 4
# kDLFloat8_e4m3fn and kDLFloat8_e5m2 (DLPack 1.1), what torch exports its float8 tensors as
KDL_FLOAT8 = {"float8_e4m3fn": 10, "float8_e5m2": 12}

USED_NAME = b"used_dltensor"
NAME = b"dltensor"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DELETER),
]
DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, DESTRUCTOR]
capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype = ctypes.c_void_p
capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
capsule_valid.restype = ctypes.c_int
capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
capsule_set_name.restype = ctypes.c_int
capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]


def data_type(dtype: np.dtype) -> tuple[int, int]:
    """DLPack's ``(code, bits)`` for a numpy dtype (ml_dtypes' bfloat16 and 8-bit floats
    included)."""
    if dtype.name == "bfloat16":
        return KDL_BFLOAT, 16
    if dtype.name in KDL_FLOAT8:
        return KDL_FLOAT8[dtype.name], 8
    if dtype.kind not in _CODES:
        raise TypeError(f"DLPack has no type for {dtype}")
    return _CODES[dtype.kind], dtype.itemsize * 8


def numpy_dtype(code: int, bits: int) -> np.dtype | None:
    """The numpy dtype of DLPack's ``(code, bits)``; None where numpy has none."""
    if (code, bits) == (KDL_BFLOAT, 16):
        return dt.to_numpy("bfloat16")
    for name, float8 in KDL_FLOAT8.items():
        if (code, bits) == (float8, 8):
            return dt.to_numpy(name)
    if (code, bits) == (_CODES["b"], 8):
        return np.dtype(np.bool_)
    kind = _KINDS.get(code)
    widths = (16, 32, 64) if kind == "f" else (8, 16, 32, 64)
    if kind not in ("i", "u", "f") or bits not in widths:
        return None
    return np.dtype(f"{kind}{bits // 8}")


def device_name(device_type: int) -> str:
    return DEVICE_NAMES.get(device_type, f"an unknown device (DLPack device type {device_type})")
