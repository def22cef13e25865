"""What this machine can run: Python packages, LLVM targets, the CUDA driver and GPUs, ptxas,
an OpenCL device.

`schedlang info` prints these probes, and `target="auto"` asks `cuda_available()`. Each probe
returns a `Probe` instead of raising, because a missing GPU or driver is an ordinary state of a
machine (CI has none) and the reason it is missing is the useful part of the answer.

The heavy imports (llvmlite, cuda-python, pyopencl) happen inside the probes so that
`import schedlang` stays fast and works on machines without them. This module is a base module
of the layer rules: it imports nothing from the stage folders, so any stage may use it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
from typing import NamedTuple

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"


class Probe(NamedTuple):
    """An answer to "is X usable here?", with the version found or the reason it is not."""

    ok: bool
    detail: str


def python_version() -> str:
    """The running interpreter, e.g. ``3.11.7 (CPython)``."""
    return f"{platform.python_version()} ({platform.python_implementation()})"


def probe_package(name: str) -> Probe:
    """Whether `name` imports, and its version: a package that is installed but fails to
    import (a broken wheel, a missing shared library) is as unusable as a missing one."""
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # any import failure means "not usable"
        return Probe(False, f"not importable ({_reason(exc)})")
    version = getattr(module, "__version__", None)
    if version is None:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "unknown version"
    return Probe(True, str(version))


def probe_llvm() -> Probe:
    """The LLVM version built into llvmlite: it decides which intrinsics and PTX versions the
    code generators may use."""
    try:
        import llvmlite.binding as llvm
    except Exception as exc:
        return Probe(False, f"not available: llvmlite does not import ({_reason(exc)})")
    return Probe(True, ".".join(str(part) for part in llvm.llvm_version_info))


@functools.lru_cache(maxsize=1)
def probe_nvptx() -> Probe:
    """Whether llvmlite's LLVM was built with the NVPTX backend, without which no PTX can be
    generated even on a machine with a GPU."""
    try:
        import llvmlite.binding as llvm
    except Exception as exc:
        return Probe(False, f"not available: llvmlite does not import ({_reason(exc)})")
    try:
        target = llvm.Target.from_triple(NVPTX_TRIPLE)
    except Exception:  # older llvmlite: targets must be initialised first
        _initialize_llvm_targets(llvm)
        try:
            target = llvm.Target.from_triple(NVPTX_TRIPLE)
        except Exception as exc:
            return Probe(False, f"not in this LLVM build ({_reason(exc)})")
    return Probe(True, f"{NVPTX_TRIPLE} ({target.description})")


def _initialize_llvm_targets(llvm: object) -> None:
    """Registers LLVM's targets on llvmlite versions that do not do it automatically.

    llvmlite >= 0.45 initialises LLVM itself and raises on the deprecated `initialize()`, so each
    call is tried on its own and failures are ignored: the retry of `from_triple` decides.
    """
    for name in ("initialize", "initialize_all_targets", "initialize_all_asmprinters"):
        function = getattr(llvm, name, None)
        if function is None:
            continue
        try:
            function()
        except Exception:  # see docstring
            pass


class GpuInfo(NamedTuple):
    """One CUDA device as the driver reports it."""

    index: int
    name: str
    compute_capability: tuple[int, int]

    @property
    def arch(self) -> str:
        """The ``sm_XY`` name that PTX targets and ``-arch=`` options use."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"


class CudaCallError(RuntimeError):
    """A CUDA driver call returned an error code; `code` is its name, e.g. CUDA_ERROR_NO_DEVICE."""

    def __init__(self, call: str, code: str) -> None:
        super().__init__(f"{call}: {code}")
        self.call = call
        self.code = code


def cuda_devices() -> list[GpuInfo]:
    """The GPUs the CUDA driver sees; `probe_cuda` is the form that never raises.

    Raises `CudaCallError` when the driver answers with an error code (no GPU, driver too old),
    and whatever cuda-python raises when there is no driver library at all.
    """
    from cuda.bindings import driver

    _check(driver, driver.cuInit(0), "cuInit")
    count = _check(driver, driver.cuDeviceGetCount(), "cuDeviceGetCount")
    attribute = driver.CUdevice_attribute
    devices = []
    for index in range(count):
        device = _check(driver, driver.cuDeviceGet(index), "cuDeviceGet")
        raw_name = _check(driver, driver.cuDeviceGetName(256, device), "cuDeviceGetName")
        name = raw_name.split(b"\0", 1)[0].decode(errors="replace").strip()
        capability = []
        for which in ("MAJOR", "MINOR"):
            attr = getattr(attribute, f"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_{which}")
            value = driver.cuDeviceGetAttribute(attr, device)
            capability.append(int(_check(driver, value, "cuDeviceGetAttribute")))
        devices.append(GpuInfo(index, name, (capability[0], capability[1])))
    return devices


def _check(driver: object, result: tuple, call: str) -> object:
    """Unpacks a cuda-python result tuple ``(CUresult, value...)``, raising on an error code."""
    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise CudaCallError(call, str(getattr(error, "name", error)))
    return values[0] if values else None


def probe_cuda() -> Probe:
    """Whether a CUDA driver and at least one GPU are usable, and which GPUs, or why not."""
    try:
        from cuda.bindings import driver  # noqa: F401 - only checks that cuda-python imports
    except Exception as exc:
        return Probe(False, f"no cuda-python ({_reason(exc)})")
    try:
        devices = cuda_devices()
    except CudaCallError as exc:
        if exc.code == "CUDA_ERROR_NO_DEVICE":
            return Probe(False, f"no GPU (the CUDA driver says {exc})")
        return Probe(False, f"no usable CUDA driver ({exc})")
    except Exception as exc:  # e.g. DynamicLibNotFoundError: no libcuda.so here
        return Probe(False, f"no CUDA driver ({_reason(exc)})")
    if not devices:
        return Probe(False, "no GPU (the CUDA driver sees none)")
    listed = ", ".join(f"{gpu.index}: {gpu.name} ({gpu.arch})" for gpu in devices)
    plural = "s" if len(devices) != 1 else ""
    return Probe(True, f"{len(devices)} GPU{plural}: {listed}")


@functools.lru_cache(maxsize=1)
def cuda_available() -> bool:
    """Whether CUDA kernels can run here; cached because the answer does not change while the
    process lives and `cuInit` is slow."""
    return probe_cuda().ok and probe_nvptx().ok


def auto_target() -> str:
    """The target ``target="auto"`` means on this machine: CUDA when it can run, else the CPU."""
    return "cuda" if cuda_available() else "cpu"


OPENCL_INSTALL = (
    "pip install 'schedlang[opencl]' (pyopencl, and pocl for an OpenCL device on the CPU)"
)


@functools.lru_cache(maxsize=1)
def opencl_choice() -> tuple[object | None, str]:
    """The pyopencl device OpenCL kernels run on, the first GPU pyopencl finds, else its first
    device of any kind, with its name; or None and why there is none. A device whose compiler
    cannot build a one-line kernel is passed over: pocl's CPU device on a processor its LLVM
    does not know (``unknown target CPU 'generic'``) lists itself but builds nothing."""
    try:
        import pyopencl as cl
    except Exception as exc:
        return None, f"no pyopencl ({_reason(exc)}); {OPENCL_INSTALL}"
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as exc:  # no ICD loader, or no platform
        return None, f"no OpenCL platform ({_reason(exc)}); {OPENCL_INSTALL}"
    if not devices:
        return None, f"no OpenCL device; {OPENCL_INSTALL}"
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    refusals = []
    for device in gpus + [d for d in devices if d not in gpus]:
        name = f"{device.name.strip()} ({device.platform.name.strip()})"
        refused = _builds_nothing(cl, device)
        if refused is None:
            return device, name
        refusals.append(f"{name} cannot build a program: {refused}")
    return None, "; ".join(refusals)


_PROBE_KERNEL = "__kernel void probe(__global int *x) { x[0] = 1; }"


def _builds_nothing(cl, device) -> str | None:
    """Why `device`'s compiler refuses a one-line kernel, or None where it builds it."""
    try:
        cl.Program(cl.Context([device]), _PROBE_KERNEL).build()
    except cl.Error as exc:
        lines = [line.strip() for line in str(exc).splitlines()]
        errors = [line for line in lines if line.startswith("error:")]
        return errors[0] if errors else _reason(exc)
    return None


def probe_opencl() -> Probe:
    """Whether OpenCL kernels can run here, and on which device, or why not."""
    device, detail = opencl_choice()
    return Probe(device is not None, detail)


def probe_ptxas() -> Probe:
    """Whether NVIDIA's ptxas is on PATH, and its version. It is optional (the driver compiles
    PTX itself); tests use it to validate generated PTX offline on machines without a GPU."""
    path = shutil.which("ptxas")
    if path is None:
        return Probe(False, "not on PATH")
    try:
        completed = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Probe(False, f"not runnable: {path} ({_reason(exc)})")
    lines = [line.strip() for line in completed.stdout.splitlines() if line.strip()]
    if completed.returncode != 0 or not lines:
        return Probe(False, f"not runnable: {path} --version exits with {completed.returncode}")
    release = [line for line in lines if "release" in line]
    return Probe(True, f"{path} ({(release or lines)[-1]})")


def platform_report() -> list[tuple[str, str]]:
    """Every probe as ``(item, value)`` rows, in the order `schedlang info` prints them."""
    rows = [("python", python_version())]
    for name in ("schedlang", "numpy", "islpy", "llvmlite"):
        rows.append((name, probe_package(name).detail))
    rows.append(("LLVM", probe_llvm().detail))
    rows.append(("NVPTX target", _yes_no(probe_nvptx())))
    rows.append(("CUDA", _yes_no(probe_cuda())))
    rows.append(("ptxas", _yes_no(probe_ptxas())))
    rows.append(("OpenCL", _yes_no(probe_opencl())))
    rows.append(("target='auto'", auto_target()))
    rows.append(("CPU cores", f"{usable_cores()} usable"))
    rows.append(("parallel loops", _threads_row()))
    return rows


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, which a container or ``taskset``
    narrows, else every core."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return max(1, len(usable) if usable else (os.cpu_count() or 1))


THREADS_VARIABLE = "SCHEDLANG_NUM_THREADS"


def parallel_threads() -> int:
    """Threads a CPU parallel loop runs on, the calling one included: the usable cores, or
    what ``SCHEDLANG_NUM_THREADS`` says (as ``OMP_NUM_THREADS`` or TVM's ``TVM_NUM_THREADS``)."""
    told = os.environ.get(THREADS_VARIABLE, "").strip()
    if not told:
        return usable_cores()
    if not told.isdigit() or int(told) < 1:
        raise ValueError(
            f"{THREADS_VARIABLE}={told!r} is not a thread count: set it to a positive integer, "
            "or unset it to use every usable core"
        )
    return int(told)


def _threads_row() -> str:
    try:
        threads = parallel_threads()
    except ValueError as error:
        return str(error)
    told = f" ({THREADS_VARIABLE})" if os.environ.get(THREADS_VARIABLE, "").strip() else ""
    return f"{threads} threads{told}"


def _yes_no(probe: Probe) -> str:
    """Failure details already start with "no"/"not", so only successes get a "yes"."""
    return f"yes, {probe.detail}" if probe.ok else probe.detail


def _reason(exc: BaseException) -> str:
    """A one-line reason from an exception, for a table cell rather than a traceback."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message if len(message) <= 160 else message[:157] + "..."
