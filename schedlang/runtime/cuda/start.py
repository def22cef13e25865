"""The CUDA driver started on a thread while a process's first CUDA kernel compiles.

A fresh process pays for CUDA before its first kernel loads: `cuInit`, the primary context and
the driver's first PTX compilation take 0.1-0.3 s together. None of it depends on the kernel,
and the driver releases the GIL while it works, so `start` runs it beside the lowering and code
generation rather than after them. Nothing waits for the thread: `driver` serialises the
device's initialisation and module loads with locks, so whoever comes second finds the work
done. Failures are left to the caller's own first call, which meets them again and reports them
with its context (no GPU, no driver, an architecture the driver does not know).
"""

from __future__ import annotations

import threading

from ...platform_info import probe_cuda
from . import driver

_lock = threading.Lock()
_thread: threading.Thread | None = None
_empty: object = None  # the empty kernel's module, held for the process (it is tiny)
_compile_only = False


def compile_only() -> None:
    """Never start CUDA in this process: it compiles kernels for another that runs them (a
    tuner's compile processes), and a context of its own would only take GPU memory."""
    global _compile_only
    _compile_only = True


def start() -> None:
    """Start CUDA in the background, once per process (never after `compile_only`)."""
    global _thread
    with _lock:
        if _thread is None and not _compile_only:
            _thread = threading.Thread(target=_start, name="schedlang-cuda-start", daemon=True)
            _thread.start()


def _start() -> None:
    global _empty
    try:
        if not probe_cuda().ok:
            return
        device = driver.device()
        what = "the empty kernel CUDA starts with"
        _empty = driver.load_module(_empty_kernel(device.arch), what)
    except Exception:  # reported by the caller's own first call (see the module's note)
        pass


def _empty_kernel(arch: str) -> str:
    """PTX of a kernel that returns, for `arch`: its load starts the driver's PTX compiler."""
    from ...codegen.nvptx.arch import ptx_version

    version = ptx_version(arch)
    return (
        f".version {version // 10}.{version % 10}\n.target {arch}\n.address_size 64\n"
        ".visible .entry schedlang_start() { ret; }\n"
    )
