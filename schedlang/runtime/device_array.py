"""`DeviceArray`: an array that stays where kernels run, and `sl.array` / `sl.empty` to make one.

Calling a CUDA kernel on numpy arrays copies every argument to the GPU and the outputs back,
which costs more than most kernels. Arrays made with ``device="cuda"`` live in GPU memory
(``cuMemAlloc``, freed when the array is collected) and are passed as they are; ``.numpy()``
copies one back. They export ``__cuda_array_interface__`` (version 3), so cupy, numba and
torch can read them without copies too. ``device="cpu"`` keeps a numpy array with the same
interface, so code can switch devices with one argument. Both export ``__dlpack__``
(``torch.from_dlpack``, ``numpy.from_dlpack``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir import dtype as dt
from .arrays import aligned_empty
from .cuda import driver
from .dlpack import exporter
from .dlpack.abi import KDL_CPU, KDL_CUDA

DEVICES = ("cuda", "cpu")


def _poison(dtype: np.dtype) -> tuple[int, int]:
    """The memset unit (bytes) and pattern of `DeviceArray.poison`: a NaN of each float dtype
    (float64's is its upper word twice), alternating bits (large negatives) for integers."""
    if dtype.itemsize == 1:
        return 1, dt.NAN8 if dt.is_float8(dtype.name) else 0xAB
    if dtype.itemsize == 2:
        return 2, 0x7FC0 if dtype.name == "bfloat16" else (0x7E00 if dtype.kind == "f" else 0xAAAB)
    if dtype.kind == "f":
        return 4, 0x7FC00000 if dtype.itemsize == 4 else 0x7FF80000
    return 4, 0xAAAAAAAB


class DeviceArray:
    """A C-contiguous array in the memory of `device` (``"cuda"`` or ``"cpu"``), starting on a
    64-byte boundary on the CPU (the GPU driver aligns more)."""

    def __init__(self, shape: Sequence[int], dtype: str | np.dtype, device: str = "cuda") -> None:
        self._host: np.ndarray | None = None
        self.ptr = 0
        if device not in DEVICES:
            raise ValueError(f"unknown device {device!r}; use 'cuda' or 'cpu'")
        self.shape = tuple(int(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"a shape has no negative extents, got {self.shape}")
        self.dtype = dt.to_numpy(dt.canonical(dtype))
        self.device = device
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        if device == "cpu":
            # On a cache line, as LLVM's vector code likes (numpy only promises 16 bytes; a
            # vectorized CPU kernel ran 1.7x slower on an output starting mid-line).
            self._host = aligned_empty(self.shape, self.dtype)
            self.ptr = self._host.ctypes.data
        else:
            cuda = driver.driver()
            driver.device()
            allocated = cuda.cuMemAlloc(max(self.nbytes, 1))
            what = f"allocating {self.nbytes} bytes on the GPU"
            self.ptr = int(driver.check(allocated, what))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def numpy(self) -> np.ndarray:
        """A host copy (for ``device="cpu"``, the array itself)."""
        if self._host is not None:
            return self._host
        out = np.empty(self.shape, self.dtype)
        self.copy_to_host(out)
        return out

    def copy_from_host(self, source: np.ndarray) -> None:
        """Overwrite the contents with `source` (same shape and dtype, any layout)."""
        source = np.ascontiguousarray(source, dtype=self.dtype).reshape(self.shape)
        if self._host is not None:
            self._host[...] = source
        elif self.nbytes:
            copied = driver.driver().cuMemcpyHtoD(self.ptr, source.ctypes.data, self.nbytes)
            driver.check(copied, "copying an array to the GPU")

    def poison(self) -> None:
        """Fill with a value no correct kernel leaves behind: NaN for floats, a bit pattern
        far from what kernels compute for integers; on the GPU a memset, no copy."""
        unit, pattern = _poison(self.dtype)
        if self._host is not None:
            self._host.reshape(-1).view(f"u{unit}")[...] = pattern
        elif self.nbytes:
            cuda = driver.driver()
            fill = {1: cuda.cuMemsetD8, 2: cuda.cuMemsetD16, 4: cuda.cuMemsetD32}[unit]
            done = fill(self.ptr, pattern, self.nbytes // unit)
            driver.check(done, "filling an array on the GPU")

    def copy_to_host(self, target: np.ndarray) -> None:
        """Write the contents into the C-contiguous array `target`."""
        if self._host is not None:
            target[...] = self._host
        elif self.nbytes:
            copied = driver.driver().cuMemcpyDtoH(target.ctypes.data, self.ptr, self.nbytes)
            driver.check(copied, "copying an array from the GPU")

    @property
    def __cuda_array_interface__(self) -> dict:
        if self.device != "cuda":
            raise AttributeError("a DeviceArray on the cpu has no __cuda_array_interface__")
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
        }

    def __dlpack__(self, stream: object = None, **options: object) -> object:
        """A DLPack capsule over this memory (no copy). Kernels and copies finish before they
        return, so there is no pending work for a consumer's `stream` to wait for."""
        del stream, options
        return exporter.export(self, self.ptr, self.shape, self.dtype, self.__dlpack_device__())

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDL_CUDA, 0) if self.device == "cuda" else (KDL_CPU, 0)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        host = self.numpy()
        return host if dtype is None else host.astype(dtype)

    def __del__(self) -> None:
        if self._host is None and self.ptr:
            try:
                driver.driver().cuMemFree(self.ptr)
            except Exception:  # the interpreter is shutting down, the driver is gone
                pass
            self.ptr = 0

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, device={self.device!r})"


def array(data: object, device: str = "cuda") -> DeviceArray:
    """`data` (anything numpy converts) copied to `device`."""
    host = np.asarray(data)
    out = DeviceArray(host.shape, host.dtype, device)
    out.copy_from_host(host)
    return out


def empty(shape: Sequence[int] | int, dtype: str = "float32", device: str = "cuda") -> DeviceArray:
    """An uninitialised array of `shape` and `dtype` on `device`."""
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    return DeviceArray(dims, dtype, device)
