"""Objects that export DLPack and nothing else, as JAX arrays do: one over a numpy array (host
memory), and one that describes any pointer as GPU memory, built field by field so that tests
can give it the types, strides and devices a real producer might."""

from __future__ import annotations

import ctypes

import numpy as np

from schedlang.runtime.dlpack.abi import (
    DELETER,
    DESTRUCTOR,
    KDL_CUDA,
    NAME,
    USED_NAME,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    capsule_new,
    capsule_valid,
)


class HostProducer:
    """`array` through DLPack alone. `versioned=False` gives an older producer, whose
    ``__dlpack__`` takes only `stream` (numpy then reads it as read-only)."""

    def __init__(self, array: np.ndarray, versioned: bool = True) -> None:
        self._array = array
        self._versioned = versioned

    def __dlpack__(self, stream=None, **options):
        if not self._versioned:
            return self._array.__dlpack__(stream=stream)
        return self._array.__dlpack__(stream=stream, **options)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()


class GpuProducer:
    """A tensor at `ptr` on `device`, exported as an unversioned ``DLManagedTensor``.
    `element` is DLPack's ``(code, bits, lanes)``, `strides` are in elements. `deleted` counts
    the deleter's calls, `requests` holds the keyword arguments of each ``__dlpack__`` call,
    `capsules` what it returned; `stream_keyword=False` gives a producer whose ``__dlpack__``
    takes no arguments."""

    def __init__(
        self,
        ptr: int,
        shape: tuple[int, ...],
        *,
        element: tuple[int, int, int] = (2, 32, 1),
        strides: tuple[int, ...] | None = None,
        byte_offset: int = 0,
        device: tuple[int, int] = (KDL_CUDA, 0),
        stream_keyword: bool = True,
        on_delete=None,
    ) -> None:
        self.device = device
        self.deleted = 0
        self.requests: list[dict] = []
        self.capsules: list[object] = []
        self._stream_keyword = stream_keyword
        self._on_delete = on_delete
        self._shape = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self._deleter = DELETER(self._delete)
        managed = DLManagedTensor()
        managed.dl_tensor.data = ptr or None
        managed.dl_tensor.device = DLDevice(*device)
        managed.dl_tensor.ndim = len(shape)
        managed.dl_tensor.dtype = DLDataType(*element)
        managed.dl_tensor.shape = ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64))
        if self._strides is not None:
            managed.dl_tensor.strides = ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64))
        managed.dl_tensor.byte_offset = byte_offset
        managed.deleter = self._deleter
        self._managed = managed

    def _delete(self, managed) -> None:
        assert ctypes.addressof(managed.contents) == ctypes.addressof(self._managed)
        self.deleted += 1
        if self._on_delete is not None:
            self._on_delete()

    def __dlpack__(self, **options):
        if options and not self._stream_keyword:
            raise TypeError("__dlpack__() takes no keyword arguments")
        self.requests.append(options)
        capsule = capsule_new(ctypes.addressof(self._managed), NAME, DESTRUCTOR())
        self.capsules.append(capsule)
        return capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def taken(self) -> list[bool]:
        """Per capsule handed out, whether a consumer took it (renamed it)."""
        return [bool(capsule_valid(c, USED_NAME)) for c in self.capsules]
