"""Compiled GPU code kept on disk, so a new process skips the driver's PTX compilation.

With the disk cache on (`disk_cache`: the default) and NVIDIA's ptxas installed, the PTX of a
kernel is assembled to a cubin by ptxas for the architecture the PTX targets, and the cubin is
stored under a key of the PTX's hash and the device's architecture; later processes load the
cubin directly. Without ptxas, or with the cache off, nothing is written and the driver
compiles the PTX on load (keeping its own cache of it). The files go through
`codegen.disk_cache`: a cubin that fails its checksum is assembled again, and a folder that
cannot be written only costs the time of assembling.

Not the driver's linker (``cuLinkAddData``), which this cache used before: on an H100 with the
CUDA 13 driver its cubins of kernels that pipeline tiles through the copy engine fault with
misaligned addresses, where ptxas's cubins and the driver's own loading of the PTX run right.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ...codegen import disk_cache
from ...codegen.nvptx.assemble import assemble


def path_for(ptx: str, arch: str) -> Path | None:
    """Where the cubin of `ptx` for `arch` lives, or None when the disk cache is off."""
    folder = disk_cache.directory()
    if folder is None:
        return None
    key = hashlib.sha256(f"{arch}\n{ptx}".encode()).hexdigest()
    return folder / "cuda" / f"{key}.cubin"


def cubin(ptx: str, arch: str) -> bytes | None:
    """The cubin of `ptx` for `arch`, from the disk when a verified one is there, else
    assembled and stored; None when the disk cache is off or ptxas is missing (the driver
    then compiles the PTX itself)."""
    path = path_for(ptx, arch)
    if path is None:
        return None
    cached = disk_cache.read(path)
    if cached is not None:
        return cached
    made = compile_ptx(ptx)
    if made is not None:
        disk_cache.write(path, made)
    return made


def compile_ptx(ptx: str) -> bytes | None:
    """ptxas's cubin of `ptx`, for the architecture its ``.target`` names (``sm_90a`` keeps
    its ``a``); None where ptxas is missing or refuses it."""
    target = re.search(r"^\.target\s+(sm_\w+)", ptx, re.MULTILINE)
    return None if target is None else assemble(ptx, target.group(1))
