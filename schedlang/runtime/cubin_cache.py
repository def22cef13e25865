"""Compiled GPU code kept on disk, so a new process skips the driver's PTX compilation.

With ``SCHEDLANG_CACHE_DIR`` set, the PTX of a kernel is compiled to a cubin by the driver's
linker (the same compiler `cuModuleLoadData` runs on PTX) and the cubin is stored under a key of
the PTX's hash and the device's architecture; later processes load the cubin directly. Without
the variable nothing is written, and PTX is loaded as it is.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any


def path_for(ptx: str, arch: str) -> Path | None:
    """Where the cubin of `ptx` for `arch` lives, or None when the disk cache is off."""
    folder = os.environ.get("SCHEDLANG_CACHE_DIR")
    if not folder:
        return None
    key = hashlib.sha256(f"{arch}\n{ptx}".encode()).hexdigest()
    return Path(folder) / "cuda" / f"{key}.cubin"


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


def store(path: Path, cubin: bytes) -> None:
    """Write `cubin` atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as out:
        out.write(cubin)
    os.replace(tmp, path)
