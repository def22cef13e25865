"""Exporting a `DeviceArray` through DLPack (``torch.from_dlpack``, ``numpy.from_dlpack``).

DLPack hands a consumer a ``DLManagedTensor`` inside a PyCapsule named ``"dltensor"``; the
consumer renames the capsule ``"used_dltensor"`` and calls the tensor's `deleter` when done with
the memory. Until then the array, the struct and its shape must stay alive, so each export is
kept in `_alive` under the struct's address and released by the deleter (or by the capsule's
destructor when no consumer ever took it). Everything is C-contiguous, so strides are NULL.
"""

from __future__ import annotations

import ctypes

import numpy as np

KDL_CPU, KDL_CUDA = 1, 2
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # kDLInt, kDLUInt, kDLFloat, kDLBool
_BFLOAT = 4  # kDLBfloat


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [
    ("dl_tensor", _Tensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]
_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_NAME = b"dltensor"

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _DESTRUCTOR]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]

_alive: dict[int, tuple[object, _Managed, ctypes.Array]] = {}


def _release(managed: ctypes.POINTER(_Managed)) -> None:  # type: ignore[valid-type]
    _alive.pop(ctypes.addressof(managed.contents), None)


def _destroy(capsule: int) -> None:
    """The capsule is collected: release the tensor unless a consumer took it."""
    pyobj = ctypes.cast(capsule, ctypes.py_object)
    if _capsule_valid(pyobj, _NAME):
        _alive.pop(_capsule_pointer(pyobj, _NAME), None)


_deleter = _DELETER(_release)
_destructor = _DESTRUCTOR(_destroy)


def data_type(dtype: np.dtype) -> tuple[int, int]:
    """DLPack's ``(code, bits)`` for a numpy dtype (ml_dtypes' bfloat16 included)."""
    if dtype.name == "bfloat16":
        return _BFLOAT, 16
    if dtype.kind not in _CODES:
        raise TypeError(f"DLPack has no type for {dtype}")
    return _CODES[dtype.kind], dtype.itemsize * 8


def export(
    owner: object, ptr: int, shape: tuple[int, ...], dtype: np.dtype, device: tuple[int, int]
):
    """A ``"dltensor"`` capsule over `ptr`, keeping `owner` alive until the consumer is done."""
    managed = _Managed()
    dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    code, bits = data_type(dtype)
    managed.dl_tensor.data = ptr or None
    managed.dl_tensor.device = _Device(*device)
    managed.dl_tensor.ndim = len(shape)
    managed.dl_tensor.dtype = _DataType(code, bits, 1)
    managed.dl_tensor.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    managed.dl_tensor.strides = None
    managed.dl_tensor.byte_offset = 0
    managed.deleter = _deleter
    address = ctypes.addressof(managed)
    _alive[address] = (owner, managed, dims)
    return _capsule_new(address, _NAME, _destructor)
