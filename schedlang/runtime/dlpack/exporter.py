"""Exporting a `DeviceArray` through DLPack (``torch.from_dlpack``, ``numpy.from_dlpack``).

DLPack hands a consumer a ``DLManagedTensor`` inside a PyCapsule named ``"dltensor"``
(`abi`); the consumer renames the capsule ``"used_dltensor"`` and calls the tensor's
`deleter` when done with the memory. Until then the array, the struct and its shape must stay
alive, so each export is kept in `_alive` under the struct's address and released by the
deleter (or by the capsule's destructor when no consumer ever took it). Everything is
C-contiguous, so strides are NULL.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .abi import (
    DELETER,
    DESTRUCTOR,
    NAME,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    capsule_new,
    capsule_pointer,
    capsule_valid,
    data_type,
)

_alive: dict[int, tuple[object, DLManagedTensor, ctypes.Array]] = {}


def _release(managed: ctypes.POINTER(DLManagedTensor)) -> None:  # type: ignore[valid-type]
    _alive.pop(ctypes.addressof(managed.contents), None)


def _destroy(capsule: int) -> None:
    """The capsule is collected: release the tensor unless a consumer took it."""
    pyobj = ctypes.cast(capsule, ctypes.py_object)
    if capsule_valid(pyobj, NAME):
        _alive.pop(capsule_pointer(pyobj, NAME), None)


_deleter = DELETER(_release)
_destructor = DESTRUCTOR(_destroy)


def export(
    owner: object, ptr: int, shape: tuple[int, ...], dtype: np.dtype, device: tuple[int, int]
):
    """A ``"dltensor"`` capsule over `ptr`, keeping `owner` alive until the consumer is done."""
    managed = DLManagedTensor()
    dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    code, bits = data_type(dtype)
    managed.dl_tensor.data = ptr or None
    managed.dl_tensor.device = DLDevice(*device)
    managed.dl_tensor.ndim = len(shape)
    managed.dl_tensor.dtype = DLDataType(code, bits, 1)
    managed.dl_tensor.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    managed.dl_tensor.strides = None
    managed.dl_tensor.byte_offset = 0
    managed.deleter = _deleter
    address = ctypes.addressof(managed)
    _alive[address] = (owner, managed, dims)
    return capsule_new(address, NAME, _destructor)
