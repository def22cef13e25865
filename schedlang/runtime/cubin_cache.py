"""Compiled GPU code kept on disk, so a new process skips the driver's PTX compilation.

With the disk cache on (`disk_cache`: the default), the PTX of a kernel is compiled to a cubin
by the driver's linker (the same compiler `cuModuleLoadData` runs on PTX) and the cubin is
stored under a key of the PTX's hash and the device's architecture; later processes load the
cubin directly. With it off, nothing is written, and PTX is loaded as it is. The files go through
`codegen.disk_cache`: a cubin that fails its checksum is compiled again, and a folder that cannot
be written only costs the time of compiling.
"""

from __future__ import annotations

import ctypes
import hashlib
from pathlib import Path
from typing import Any

from ..codegen import disk_cache


def path_for(ptx: str, arch: str) -> Path | None:
    """Where the cubin of `ptx` for `arch` lives, or None when the disk cache is off."""
    folder = disk_cache.directory()
    if folder is None:
        return None
    key = hashlib.sha256(f"{arch}\n{ptx}".encode()).hexdigest()
    return folder / "cuda" / f"{key}.cubin"


def cubin(cuda: Any, check, ptx: str, arch: str, what: str) -> bytes | None:
    """The cubin of `ptx` for `arch`, from the disk when a verified one is there, else compiled
    and stored; None when the disk cache is off (the driver then compiles the PTX itself)."""
    path = path_for(ptx, arch)
    if path is None:
        return None
    return disk_cache.load_or_make(path, lambda: compile_ptx(cuda, check, ptx, what))


def compile_ptx(cuda: Any, check, ptx: str, what: str) -> bytes:
    """The cubin the driver's linker makes of `ptx` for the current context's device."""
    state = check(cuda.cuLinkCreate(0, [], []), f"starting the linker for {what}")
    try:
        data = ptx.encode() + b"\0"
        kind = cuda.CUjitInputType.CU_JIT_INPUT_PTX
        added = cuda.cuLinkAddData(state, kind, data, len(data), b"kernel.ptx", 0, [], [])
        check(added, f"compiling the PTX of {what}")
        done = check(cuda.cuLinkComplete(state), f"linking {what}")
        pointer, size = done
        return ctypes.string_at(int(pointer), int(size))
    finally:
        cuda.cuLinkDestroy(state)
