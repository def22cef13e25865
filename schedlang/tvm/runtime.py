"""TE's runtime objects on schedlang: devices, ``NDArray``, built modules and their timing,
saving and loading (``tvm.runtime.load_module``)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import load as load_kernel
from ..errors import LaunchError, LoweringError
from ..platform_info import cuda_available
from ..runtime.device_array import DeviceArray

# TE's device types; those past CUDA and OpenCL name targets schedlang does not compile for,
# devices that never exist here (a test that loops over TE's targets skips them)
OPENCL = 4
_KINDS = {1: "cpu", 2: "cuda", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm"}
_NAMES = {"cpu": 1, "llvm": 1, "c": 1, "cuda": 2, "nvptx": 2, "gpu": 2, "cl": 4, "opencl": 4}
_NAMES.update({"vulkan": 7, "metal": 8, "rocm": 10})


@dataclass(frozen=True)
class Device:
    """A TE device: ``tvm.cpu(0)``, ``tvm.cuda(0)``, ``tvm.device("cuda", 0)``."""

    device_type: int
    device_id: int = 0

    @property
    def exist(self) -> bool:
        if self.device_type == 1:
            return True
        if self.device_type == OPENCL and self.device_id == 0:
            from ..runtime.opencl.device import opencl_available

            return opencl_available()
        return self.device_type == 2 and self.device_id == 0 and cuda_available()

    @property
    def compute_version(self) -> str | None:
        """A CUDA device's compute capability (``"9.0"``); None where there is no such GPU."""
        if self.device_type != 2 or not self.exist:
            return None
        from ..runtime.cuda import driver

        digits = driver.device().arch[len("sm_") :]
        return f"{digits[:-1]}.{digits[-1]}"

    def sync(self) -> None:
        """Kernels on the device are done (schedlang's calls wait for their own)."""

    def __repr__(self) -> str:
        return f"{_KINDS[self.device_type]}({self.device_id})"


def device(dev_type: object, dev_id: int = 0) -> Device:
    """The device of a target name (``"llvm"``, ``"cuda"``, ...; its options, as in
    ``"llvm -mcpu=core-avx2"``, say nothing of where arrays live, as in TE) or a device type
    number."""
    if isinstance(dev_type, str) and dev_type.split():
        dev_type = dev_type.split()[0]
    kind = _NAMES.get(dev_type) if isinstance(dev_type, str) else dev_type
    if kind not in _KINDS:
        raise LaunchError(f"unknown device {dev_type!r}; use 'cpu' ('llvm') or 'cuda'")
    return Device(kind, dev_id)


def cpu(dev_id: int = 0) -> Device:
    return Device(1, dev_id)


def cuda(dev_id: int = 0) -> Device:
    return Device(2, dev_id)


gpu = cuda


def opencl(dev_id: int = 0) -> Device:
    """The OpenCL device pyopencl finds (`runtime.opencl.device`); it exists where pyopencl
    is installed and finds one."""
    return Device(OPENCL, dev_id)


cl = opencl


def rocm(dev_id: int = 0) -> Device:
    """A ROCm device, which schedlang does not compile for: it never exists."""
    return Device(10, dev_id)


class NDArray:
    """An array on a device: numpy's on the CPU, an ``sl`` device array on the GPU."""

    def __init__(self, data: np.ndarray | DeviceArray, dev: Device) -> None:
        self.data = data
        self.device = dev

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def dtype(self) -> str:
        return str(np.dtype(self.data.dtype))

    def numpy(self) -> np.ndarray:
        if isinstance(self.data, DeviceArray):
            return self.data.numpy()
        return self.data.copy()

    asnumpy = numpy

    def copyto(self, target: object) -> NDArray:
        """Copy into `target` (an array, written in place), or onto a device (a new array)."""
        if isinstance(target, NDArray):
            return target.copyfrom(self)
        from .nd import array

        return array(self, target)

    def copyfrom(self, source: object) -> NDArray:
        values = source.numpy() if isinstance(source, NDArray) else np.asarray(source)
        if isinstance(self.data, DeviceArray):
            self.data.copy_from_host(np.ascontiguousarray(values, self.data.dtype))
        else:
            self.data[...] = values
        return self

    def __repr__(self) -> str:
        return f"<tvm.nd.NDArray shape={self.shape}, {self.device}>\n{self.numpy()!r}"


def unwrap(value: object) -> object:
    """What a schedlang kernel takes for a TE argument."""
    return value.data if isinstance(value, NDArray) else value


@dataclass(frozen=True)
class BenchmarkResult:
    """Seconds per run, one entry per repeat, as TE's ``time_evaluator`` reports them."""

    results: tuple[float, ...]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def std(self) -> float:
        return statistics.pstdev(self.results)


class Module:
    """A built function as TE's module: called with its arguments, timed, saved, inspected."""

    def __init__(
        self,
        kernel: object,
        name: str,
        skipped: tuple[int, ...] = (),
        sizes: dict[int, str] | None = None,
    ) -> None:
        self.kernel = kernel
        self.entry_name = name
        self.skipped = skipped  # positions of inlined tensors listed in TE's args (`driver`)
        self.sizes = sizes or {}  # positions of TE's size variables in args, and their names
        target = getattr(kernel, "target", "cpu")
        self.cuda = target.startswith("cuda")
        self.opencl = target.startswith("opencl")
        self.type_key = "cuda" if self.cuda else "opencl" if self.opencl else "llvm"
        self.imported_modules = []
        if self.cuda or self.opencl:
            code = kernel.ptx if self.cuda else kernel.source
            self.imported_modules = [DeviceModule(code, self.type_key)]

    def __call__(self, *args: object) -> None:
        self.kernel(*self._arrays(args), **self._sizes(args))

    def simulate(self, *args: object) -> None:
        """As a call, a CUDA module's kernel run in schedlang's simulator on the CPU
        (`CudaKernel.simulate`): TE code's GPU schedules checked where there is no GPU."""
        if not self.cuda:
            where = "an OpenCL device" if self.opencl else "the CPU"
            raise LaunchError(f"{self!r} is built for {where}: call it, there is no simulator")
        self.kernel.simulate(*self._arrays(args), **self._sizes(args))

    def _arrays(self, args: tuple) -> list:
        dropped = set(self.skipped) | set(self.sizes)
        return [unwrap(a) for k, a in enumerate(args) if k not in dropped]

    def _sizes(self, args: tuple) -> dict[str, object]:
        return {name: args[k] for k, name in self.sizes.items() if k < len(args)}

    def __getitem__(self, name: str) -> Module:
        return self.get_function(name)

    def get_function(self, name: str) -> Module:
        if name != self.entry_name:
            raise AttributeError(f"module has no function {name!r}; it has {self.entry_name!r}")
        return self

    def time_evaluator(
        self,
        func_name: str,
        dev: Device,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: int = 0,
        **_,
    ):
        """A function of the arguments whose `BenchmarkResult` has, per repeat, the time of
        one run (schedlang's ``kernel.time`` over `number` runs: their median)."""
        function = self.get_function(func_name)

        def evaluate(*args: object) -> BenchmarkResult:
            arrays = function._arrays(args)
            sizes = function._sizes(args)
            times = [function.kernel.time(*arrays, repeat=number, **sizes) for _ in range(repeat)]
            return BenchmarkResult(tuple(times))

        return evaluate

    def get_source(self, fmt: str = "") -> str:
        """The host code: LLVM IR (``fmt`` "ll" or ""), or the CPU's assembly ("s", "asm");
        an OpenCL module has no host code of its own, and gives its OpenCL C."""
        if self.opencl:
            return self.kernel.source
        if fmt in ("s", "asm") and not self.cuda:
            return self.kernel.asm
        return self.kernel.llvm_ir

    def save(self, path: str, fmt: str = "") -> None:
        """Write the module to `path` (schedlang's saved-kernel format, whatever the suffix)."""
        self._savable()
        self.kernel.export(path)

    def export_library(self, path: str, fcompile: object = None, **_) -> None:
        """Write the module where `tvm.runtime.load_module` reads it; no C compiler needed."""
        self._savable()
        self.kernel.export(path)

    def _savable(self) -> None:
        if self.skipped or self.sizes:
            raise LoweringError(
                "this module was built with an inlined tensor or a size variable in its "
                "arguments, which a saved module would not know to skip; build it without "
                "that argument to save it"
            )

    def import_module(self, module: object) -> None:
        """Accepted for TE's save-and-load steps: a schedlang module holds its device code."""

    def __repr__(self) -> str:
        return f"Module({self.type_key}, {self.entry_name!r})"


class DeviceModule:
    """The GPU code of a module: a CUDA module's PTX, an OpenCL module's OpenCL C."""

    def __init__(self, code: str, type_key: str = "cuda") -> None:
        self.code = code
        self.type_key = type_key

    def get_source(self, fmt: str = "") -> str:
        return self.code

    def save(self, path: str, fmt: str = "") -> None:
        Path(path).write_text(self.code)


def load_module(path: str, fmt: str = "") -> Module | DeviceModule:
    """A module saved by ``save``/``export_library`` (or PTX, as a device module)."""
    head = Path(path).read_bytes()[:64]
    if head.lstrip().startswith((b"//", b".version")):
        return DeviceModule(Path(path).read_text())
    kernel = load_kernel(path)
    return Module(kernel, kernel.lowered.name)


def convert(value: object) -> object:
    """TE's ``tvm.runtime.convert``: schedlang takes Python values as they are."""
    return value
