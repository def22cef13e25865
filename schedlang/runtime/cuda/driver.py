"""The CUDA driver through cuda-python: imported on first use, one device, its primary context.

``cuda.bindings.driver`` takes most of a second to import and needs the driver library only
when first called, so nothing here runs before a CUDA kernel is called or a device array made.
Every call goes through `check`, which turns an error code into a `LaunchError` carrying the
driver's own name and description of it. The device is the first one CUDA shows (set
``CUDA_VISIBLE_DEVICES`` to choose); its primary context is the one torch and cupy use too, so
their tensors can be passed without copies.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import LaunchError

_lock = threading.Lock()
_modules: weakref.WeakValueDictionary[str, Module] = weakref.WeakValueDictionary()
_offered: dict[str, tuple[str, bytes]] = {}  # PTX digest -> (arch, cubin), see offer_cubin
_device_lock = threading.Lock()
_found: Device | None = None


@functools.cache
def driver() -> Any:
    """The `cuda.bindings.driver` module."""
    try:
        from cuda.bindings import driver as cuda
    except Exception as exc:  # not installed, or a broken installation
        raise LaunchError(
            f"the cuda target needs cuda-python, which does not import: {exc}"
        ) from exc
    return cuda


def describe(error: Any) -> str:
    """``CUDA_ERROR_X (the driver's sentence)`` for an error code."""
    cuda = driver()
    name = getattr(error, "name", str(error))
    status, text = cuda.cuGetErrorString(error)
    if status == cuda.CUresult.CUDA_SUCCESS and text:
        return f"{name} ({text.decode(errors='replace')})"
    return name


def check(result: tuple, what: str) -> Any:
    """The value of a cuda-python result ``(CUresult, value...)``; `what` went wrong otherwise."""
    error, *values = result
    if error != driver().CUresult.CUDA_SUCCESS:
        raise LaunchError(f"{what}: {describe(error)}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


@dataclass(frozen=True)
class Device:
    """The GPU kernels run on, with the limits checked before each launch."""

    ordinal: int
    handle: Any
    context: Any
    name: str
    arch: str
    max_threads: int
    max_block: tuple[int, int, int]
    max_grid: tuple[int, int, int]
    max_shared: int  # per block without opting in (static shared memory's limit)
    max_shared_optin: int  # per block for a kernel that opts in to more dynamic shared memory


def device() -> Device:
    """The device, initialised on first use; its context is made current in this thread."""
    found = _device()
    check(driver().cuCtxSetCurrent(found.context), "cuCtxSetCurrent")
    return found


def _device() -> Device:
    """The device, initialised once: under a lock, as `start` may be initialising it on
    its thread while the caller's asks for it."""
    global _found
    with _device_lock:
        if _found is None:
            _found = _initialise()
        return _found


NO_DRIVER = (
    "no CUDA driver on this machine, so no CUDA kernel runs here; kernel.simulate(...) runs "
    "one on the CPU, block by block and thread by thread, with the same arguments"
)


def _initialise() -> Device:
    cuda = driver()
    try:
        status = cuda.cuInit(0)
    except Exception:  # DynamicLibNotFoundError: no libcuda on this machine
        raise LaunchError(NO_DRIVER) from None
    check(status, "cuInit (is there a GPU?)")
    handle = check(cuda.cuDeviceGet(0), "cuDeviceGet")
    context = check(cuda.cuDevicePrimaryCtxRetain(handle), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    raw = check(cuda.cuDeviceGetName(256, handle), "cuDeviceGetName")
    attr = cuda.CUdevice_attribute

    def get(name: str) -> int:
        value = cuda.cuDeviceGetAttribute(getattr(attr, f"CU_DEVICE_ATTRIBUTE_{name}"), handle)
        return int(check(value, f"cuDeviceGetAttribute({name})"))

    return Device(
        ordinal=0,
        handle=handle,
        context=context,
        name=raw.split(b"\0", 1)[0].decode(errors="replace"),
        arch=f"sm_{get('COMPUTE_CAPABILITY_MAJOR')}{get('COMPUTE_CAPABILITY_MINOR')}",
        max_threads=get("MAX_THREADS_PER_BLOCK"),
        max_block=(get("MAX_BLOCK_DIM_X"), get("MAX_BLOCK_DIM_Y"), get("MAX_BLOCK_DIM_Z")),
        max_grid=(get("MAX_GRID_DIM_X"), get("MAX_GRID_DIM_Y"), get("MAX_GRID_DIM_Z")),
        max_shared=get("MAX_SHARED_MEMORY_PER_BLOCK"),
        max_shared_optin=get("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
    )


class Module:
    """A loaded CUDA module, unloaded (``cuModuleUnload``) when the last kernel holding it is
    collected: a tuner loads thousands, and each keeps its code and constants on the device."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        unload = weakref.finalize(self, _unload, handle)
        unload.atexit = False  # the driver frees everything at exit


def _unload(handle: Any) -> None:
    """From a finalizer, which has no caller to report to: a failure (the context already
    destroyed at exit) leaves the module to the driver."""
    cuda = driver()
    if _found is not None:
        cuda.cuCtxSetCurrent(_found.context)
    cuda.cuModuleUnload(handle)


def load_module(ptx: str, what: str) -> Module:
    """The module of `ptx`, loaded once while some kernel holds it. The driver compiles the PTX
    on load, and keeps its own cache of what it compiled for later processes. Not a cubin that
    the ptxas command assembled, which this loading did before: on an H200 with the CUDA 13.0
    driver and ptxas 13.0, the cubin of the d = 64 attention kernel that copies by cp.async
    and masks nothing computed wrong outputs (0.53 off at L = 512), with no race and no fault
    that compute-sanitizer saw, where the driver's compilation of the same PTX computes right
    (benchmarks/NOTES.md). The tuner's compile processes still hand their cubins over
    (`offer_cubin`): the tuner checks every kernel against the reference before it times it."""
    key = hashlib.sha256(ptx.encode()).hexdigest()
    with _lock:
        module = _modules.get(key)
        if module is None:
            module = Module(check(_load(ptx, what), f"loading the PTX of {what}"))
            _modules[key] = module
    return module


def offer_cubin(ptx: str, arch: str, cubin: bytes) -> None:
    """`cubin`, assembled from `ptx` for `arch` elsewhere (`codegen.nvptx.assemble`), to load
    instead of having the driver compile `ptx`, if the device is of that architecture."""
    with _lock:
        _offered[hashlib.sha256(ptx.encode()).hexdigest()] = (arch, cubin)


def _load(ptx: str, what: str) -> tuple:
    cuda = driver()
    arch, cubin = _offered.pop(hashlib.sha256(ptx.encode()).hexdigest(), (None, None))
    if arch is None or arch.rstrip("af") != device().arch:
        cubin = None
    data = ptx.encode() + b"\0" if cubin is None else cubin
    image = np.frombuffer(data, np.uint8)
    return cuda.cuModuleLoadData(image.ctypes.data)


def function(module: Module, name: str) -> Any:
    """Kernel `name` of `module`, valid while `module` is alive."""
    found = driver().cuModuleGetFunction(module.handle, name.encode())
    return check(found, f"finding kernel {name}")


def allow_dynamic_shared(function: Any, nbytes: int, what: str) -> None:
    """Let `function` launch with `nbytes` of dynamic shared memory; above 48 KB a kernel must
    opt in (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``) or its launches fail."""
    cuda = driver()
    attribute = cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check(cuda.cuFuncSetAttribute(function, attribute, nbytes), f"{what}: cuFuncSetAttribute")
