"""The arguments of a CUDA kernel: checked, then placed in GPU memory.

Four kinds of array are accepted. A `DeviceArray` on the GPU, any object exporting
``__cuda_array_interface__`` (torch and cupy tensors) and any object exporting DLPack from GPU
memory (JAX arrays; `dlpack.importer`) are passed by pointer, without copies; they must be
C-contiguous, in the memory of the device kernels run on, and start at a multiple of `ALIGN`
bytes (the kernels may move 16 bytes at a time; allocations always do, views at an offset into
a larger tensor may not). A numpy array (or a `DeviceArray` on the cpu, or a DLPack export of
host memory) is copied to the GPU before the launch and, when the kernel writes it, back
afterwards, so its layout does not matter. As on the CPU, dtypes, ranks and the sizes the
shapes imply are checked first, and no output may overlap another argument: the kernels
declare their buffers ``noalias``. A DLPack tensor is taken from its capsule only once every
check has passed, and handed back when the kernels are done.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...ir import dtype as dt
from ...loopir.core.nodes import Buffer, LoweredFunc
from ..argument_kinds import dtype_error, untracked
from ..arguments import named_sizes, size_values
from ..device_array import DeviceArray
from ..dlpack import importer
from ..dlpack.abi import HOST_DEVICES, KDL_CUDA, device_name
from ..size_limits import SizeLimits
from . import driver

ALIGN = 16  # nvptx.shared_layout.BUFFER_ALIGN: the alignment the kernels assume of every buffer


@dataclass(frozen=True)
class _View:
    """One argument as the checks see it: on the GPU (`ptr`) or on the host (`host`)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    ptr: int
    host: np.ndarray | None
    readonly: bool
    capsule: object = None  # a DLPack capsule to take if the call goes ahead

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class Placed:
    """Arguments ready for a launch: a device pointer per parameter and the sizes' values."""

    pointers: list[int]
    sizes: list[int]
    copies_back: list[tuple[DeviceArray, np.ndarray]] = field(default_factory=list)
    keep: list[object] = field(default_factory=list)  # alive until the kernels are done
    taken: list[importer.Taken] = field(default_factory=list)
    copied: bool = False  # some argument came from the host: a device copy of it is kept

    def finish(self) -> None:
        """Copy outputs that came as host arrays back into them, and hand DLPack tensors
        back to their producers (the kernels are done with them)."""
        for device, host in self.copies_back:
            if host.flags.c_contiguous:
                device.copy_to_host(host)
            else:
                staging = np.empty(host.shape, host.dtype)
                device.copy_to_host(staging)
                host[...] = staging
        for tensor in self.taken:
            tensor.release()


def place_arguments(
    func: LoweredFunc,
    written: Sequence[bool],
    arrays: Sequence[object],
    sizes: Mapping[str, int],
    limits: SizeLimits,
) -> Placed:
    """Check `arrays` for `func` (ValueError/TypeError; `written` and `limits` worked out at
    build) and give each a device pointer."""
    params = func.params
    named_sizes(func, sizes)  # an array passed by name is refused before the count
    if len(arrays) != len(params):
        names = ", ".join(b.name for b in params)
        raise TypeError(
            f"kernel '{func.name}' takes {len(params)} arrays ({names}), got {len(arrays)}"
        )
    given = [untracked(b.name, array, out) for b, array, out in zip(params, arrays, written)]
    views = [_view(buffer, array) for buffer, array in zip(params, given)]
    for buffer, view, original, out in zip(params, views, given, written):
        _check_type(buffer, view, original, out)
        if out and view.readonly:
            raise ValueError(f"argument '{buffer.name}' is an output but its array is read-only")
    values = size_values(func, views, sizes)
    limits.check(values, views)
    _check_overlap(params, views, written)
    placed = Placed([], values, keep=list(arrays))
    for view, out in zip(views, written):
        if view.capsule is not None:
            placed.taken.append(importer.Taken(view.capsule))
        if view.host is None:
            placed.pointers.append(view.ptr)
            continue
        copy = DeviceArray(view.shape, view.dtype, "cuda")
        copy.copy_from_host(view.host)
        placed.keep.append(copy)
        placed.copied = True
        placed.pointers.append(copy.ptr)
        if out:
            placed.copies_back.append((copy, view.host))
    return placed


def _view(buffer: Buffer, array: object) -> _View:
    if isinstance(array, DeviceArray) and array.device == "cpu":
        array = array.numpy()
    if isinstance(array, np.ndarray):
        return _View(array.shape, array.dtype, 0, array, not array.flags.writeable)
    if isinstance(array, DeviceArray):
        return _View(array.shape, array.dtype, array.ptr, None, False)
    try:
        interface = getattr(array, "__cuda_array_interface__", None)
    except KeyError:  # torch has no typestr for its float8 tensors; DLPack has codes for them
        interface = None
    # the interface has no name for bfloat16 (torch calls it "<V2", raw bytes): DLPack has
    opaque = interface is not None and np.dtype(interface["typestr"]).kind == "V"
    if interface is not None and not (opaque and hasattr(array, "__dlpack__")):
        return _interface_view(buffer, interface)
    device = importer.device_of(array)
    if device is None:
        raise TypeError(
            f"argument '{buffer.name}' must be a numpy array, an sl.array(..., device='cuda') "
            "or a GPU tensor with __cuda_array_interface__ or __dlpack__, got "
            f"{type(array).__name__}"
        )
    if device[0] in HOST_DEVICES:
        host = importer.host_array(buffer.name, array, buffer.dtype)
        return _View(host.shape, host.dtype, 0, host, not host.flags.writeable)
    if device[0] != KDL_CUDA:
        raise ValueError(
            f"argument '{buffer.name}' is in {device_name(device[0])} memory, but the kernel "
            "runs on a CUDA GPU; move it to the GPU or the host first"
        )
    return _dlpack_view(buffer, importer.dlpack_capsule(array))


def _interface_view(buffer: Buffer, interface: dict) -> _View:
    shape = tuple(int(n) for n in interface["shape"])
    dtype = np.dtype(interface["typestr"])
    ptr, readonly = interface["data"]
    strides = interface.get("strides")
    _check_placement(buffer, shape, None if strides is None else tuple(strides), dtype, int(ptr))
    return _View(shape, dtype, int(ptr), None, bool(readonly))


def _dlpack_view(buffer: Buffer, capsule: object) -> _View:
    tensor = importer.read(buffer.name, capsule)
    dtype = importer.element_dtype(buffer.name, tensor, buffer.dtype)
    strides = None
    if tensor.strides is not None:
        strides = tuple(n * dtype.itemsize for n in tensor.strides)
    _check_placement(buffer, tensor.shape, strides, dtype, tensor.ptr)
    return _View(tensor.shape, dtype, tensor.ptr, None, False, capsule)


def _check_placement(
    buffer: Buffer,
    shape: tuple[int, ...],
    strides: tuple[int, ...] | None,
    dtype: np.dtype,
    ptr: int,
) -> None:
    """A GPU tensor (`strides` in bytes, None for C-contiguous) the kernels can use in place."""
    if strides is not None and not _c_contiguous(shape, strides, dtype.itemsize):
        raise ValueError(
            f"argument '{buffer.name}' is not C-contiguous on the GPU (strides {strides} "
            f"bytes for shape {shape}); pass a contiguous copy (tensor.contiguous())"
        )
    if ptr % ALIGN:
        raise ValueError(
            f"argument '{buffer.name}' starts at a GPU address that is not a multiple of {ALIGN} "
            "bytes (a view at an offset into a larger tensor), and the kernels read and write "
            f"{ALIGN} bytes at a time; pass a tensor of its own (tensor.clone())"
        )
    if ptr:
        _check_device(buffer, ptr)


def _c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    expected = itemsize
    for n, stride in zip(reversed(shape), reversed(strides)):
        if n > 1 and stride != expected:
            return False
        expected *= n
    return True


def _check_device(buffer: Buffer, ptr: int) -> None:
    cuda = driver.driver()
    ordinal = cuda.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    status, value = cuda.cuPointerGetAttribute(ordinal, ptr)
    device = driver.device()
    if status != cuda.CUresult.CUDA_SUCCESS or int(value) != device.ordinal:
        raise ValueError(
            f"argument '{buffer.name}' is not in the memory of GPU {device.ordinal} "
            f"({device.name}), where the kernel runs; move it there first"
        )


def _check_type(buffer: Buffer, view: _View, original: object, out: bool) -> None:
    if view.dtype != dt.to_numpy(buffer.dtype):
        raise dtype_error(buffer.name, buffer.dtype, view.dtype, original, out)
    if len(view.shape) != len(buffer.shape):
        raise ValueError(
            f"argument '{buffer.name}' must have {len(buffer.shape)} dimension(s), "
            f"got an array of shape {view.shape}"
        )


def _check_overlap(params: Sequence[Buffer], views: list[_View], written: Sequence[bool]) -> None:
    for k, (buffer, view, out) in enumerate(zip(params, views, written)):
        if not out:
            continue
        for j, (other, other_view) in enumerate(zip(params, views)):
            if j != k and _overlap(view, other_view):
                raise ValueError(
                    f"argument '{buffer.name}' is an output that overlaps '{other.name}' in "
                    "memory; pass separate arrays (e.g. a copy)"
                )


def _overlap(a: _View, b: _View) -> bool:
    if a.host is not None and b.host is not None:
        return bool(np.may_share_memory(a.host, b.host))
    if a.host is not None or b.host is not None or not a.nbytes or not b.nbytes:
        return False
    return a.ptr < b.ptr + b.nbytes and b.ptr < a.ptr + a.nbytes
