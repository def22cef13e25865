"""Taking arrays from other libraries through DLPack (JAX, torch, cupy, ...) without copies.

An object with ``__dlpack__`` and ``__dlpack_device__`` says first where its memory is. Memory
the host can read (host, pinned or managed) becomes a numpy array through
``numpy.from_dlpack`` and is then treated as one. GPU memory is read out of the capsule that
``__dlpack__(stream=1)`` returns: stream 1 asks the producer to order its pending work before
CUDA's legacy default stream, the one the kernels run on (a producer whose ``__dlpack__``
takes no stream is asked without one). Only the unversioned ``DLManagedTensor`` is asked for,
which every producer hands out.

A capsule is read (`read`) before it is taken, so that an argument the checks refuse stays the
producer's to free (the capsule's destructor does it); a call that goes ahead takes it
(`Taken`), and releases it once its kernels are done.

numpy reads no ``bfloat16`` or 8-bit floats from DLPack (it has no such types of its own):
`host_array` reads such host memory itself, as a numpy array of ml_dtypes' type over the
producer's memory, which holds the taken tensor until the array goes.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from ...ir import dtype as dt
from .abi import (
    NAME,
    USED_NAME,
    DLManagedTensor,
    capsule_pointer,
    capsule_set_name,
    capsule_valid,
    numpy_dtype,
)

LEGACY_STREAM = 1  # the Python DLPack spec's number for CUDA's legacy default stream


@dataclass(frozen=True)
class DLView:
    """The tensor a DLPack capsule describes: the address of its first element, its shape,
    element type, and strides in elements (None: C-contiguous)."""

    device: tuple[int, int]
    ptr: int
    shape: tuple[int, ...]
    code: int
    bits: int
    lanes: int
    strides: tuple[int, ...] | None


def device_of(obj: object) -> tuple[int, int] | None:
    """``(device type, device id)`` of an object that exports DLPack, else None."""
    if not (hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__")):
        return None
    kind, index = obj.__dlpack_device__()
    return int(kind), int(index)


def dlpack_capsule(obj: object) -> object:
    """`obj`'s DLPack capsule, ready for use on the legacy default stream."""
    try:
        return obj.__dlpack__(stream=LEGACY_STREAM)
    except TypeError:  # a producer older than the stream argument
        return obj.__dlpack__()


def read(name: str, capsule: object) -> DLView:
    """What `capsule` holds, without taking it; a TypeError naming the argument `name` when it
    is not an unused DLPack capsule."""
    if not capsule_valid(capsule, NAME):
        raise TypeError(
            f"argument '{name}': __dlpack__() returned {type(capsule).__name__}, not an unused "
            "DLPack capsule"
        )
    managed = DLManagedTensor.from_address(capsule_pointer(capsule, NAME))
    tensor = managed.dl_tensor
    ndim = int(tensor.ndim)
    shape = tuple(int(tensor.shape[k]) for k in range(ndim))
    strides = tuple(int(tensor.strides[k]) for k in range(ndim)) if tensor.strides else None
    return DLView(
        device=(int(tensor.device.device_type), int(tensor.device.device_id)),
        ptr=(tensor.data or 0) + int(tensor.byte_offset),
        shape=shape,
        code=int(tensor.dtype.code),
        bits=int(tensor.dtype.bits),
        lanes=int(tensor.dtype.lanes),
        strides=strides,
    )


class Taken:
    """A DLPack tensor this process has taken from its capsule; its deleter runs once, at
    `release`, or when this is collected if the call stopped on an error before that."""

    def __init__(self, capsule: object) -> None:
        self._address: int | None = capsule_pointer(capsule, NAME)
        capsule_set_name(capsule, USED_NAME)  # ctypes raises what a failure sets

    def release(self) -> None:
        address, self._address = self._address, None
        if address is None:
            return
        managed = DLManagedTensor.from_address(address)
        if managed.deleter:
            managed.deleter(ctypes.cast(address, ctypes.POINTER(DLManagedTensor)))

    def __del__(self) -> None:
        self.release()


def element_dtype(name: str, tensor: DLView, wanted: str) -> np.dtype:
    """The numpy dtype of `tensor`'s elements; a TypeError naming the argument `name` where
    no schedlang dtype stores them (the kernel `wanted` its dtype)."""
    dtype = numpy_dtype(tensor.code, tensor.bits) if tensor.lanes == 1 else None
    if dtype is None:
        raise TypeError(
            f"argument '{name}' has the DLPack element type code {tensor.code} with "
            f"{tensor.bits} bits and {tensor.lanes} lane(s), which no schedlang dtype stores; "
            f"convert it to {wanted}"
        )
    return dtype


def host_array(name: str, obj: object, wanted: str) -> np.ndarray:
    """`obj`'s host memory as a numpy array, without a copy (`wanted`: the kernel's dtype,
    for the message when no schedlang dtype stores its elements)."""
    try:
        return np.from_dlpack(obj)
    except (RuntimeError, BufferError) as error:  # an element type numpy does not read
        # (bfloat16, the 8-bit floats): numpy raises the one or the other by version
        capsule = obj.__dlpack__()
        tensor = read(name, capsule)
        dtype = element_dtype(name, tensor, wanted)
        if dtype.name != "bfloat16" and not dt.is_float8(dtype.name):
            raise error from None
        return np.asarray(_Borrowed(tensor, dtype, Taken(capsule))).view(dtype)


class _Borrowed:
    """Host memory of a taken DLPack tensor as numpy's array interface (in unsigned integers
    of the elements' width, which every numpy reads); the array made from it keeps it, and so
    the tensor, alive."""

    def __init__(self, tensor: DLView, dtype: np.dtype, taken: Taken) -> None:
        width = dtype.itemsize
        strides = None if tensor.strides is None else tuple(n * width for n in tensor.strides)
        self.__array_interface__ = {
            "shape": tensor.shape,
            "typestr": f"<u{width}",
            "data": (tensor.ptr, False),
            "strides": strides,
            "version": 3,
        }
        self._taken = taken
