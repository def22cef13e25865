"""Finding NVIDIA's libdevice, the bitcode library of accurate GPU math (``__nv_expf``, ...).

The NVPTX backend lowers only a few math intrinsics itself (square root, absolute value,
rounding, fused multiply-add); everything else is a call into libdevice, linked into the module
before optimisation. It ships with every CUDA toolkit and in NVIDIA's pip wheels, so it is
looked for in this order: ``$SCHEDLANG_LIBDEVICE`` (a file), ``$CUDA_HOME`` / ``$CUDA_PATH``,
``/usr/local/cuda*``, the ``nvidia-cuda-nvcc`` wheels (CUDA 12 and 13 layouts), and Triton's
bundled copy. Packages are located with `importlib.util.find_spec`, never imported.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
from pathlib import Path

FILE = "libdevice.10.bc"
_IN_TOOLKIT = Path("nvvm") / "libdevice" / FILE
_IN_PACKAGES = {
    "nvidia.cuda_nvcc": _IN_TOOLKIT,
    "nvidia.cu13": _IN_TOOLKIT,
    "nvidia.cu12": _IN_TOOLKIT,
    "triton": Path("backends") / "nvidia" / "lib" / FILE,
}


def candidates() -> list[Path]:
    """Every place libdevice is looked for, in order (for messages that say where)."""
    places: list[Path] = []
    explicit = os.environ.get("SCHEDLANG_LIBDEVICE")
    if explicit:
        places.append(Path(explicit))
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            places.append(Path(root) / _IN_TOOLKIT)
    places.extend(Path(p) / _IN_TOOLKIT for p in sorted(glob.glob("/usr/local/cuda*")))
    for package, relative in _IN_PACKAGES.items():
        root = _package_dir(package)
        if root is not None:
            places.append(root / relative)
    return places


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent package that is missing or broken
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def find() -> Path | None:
    """The first libdevice that exists, or None; cached for the process."""
    for path in candidates():
        if path.is_file():
            return path
    return None


@functools.cache
def bitcode() -> bytes | None:
    """The contents of `find()` (read once: every module that calls math links a copy)."""
    path = find()
    return None if path is None else path.read_bytes()
