"""Finding NVIDIA's libdevice, the bitcode library of accurate GPU math (``__nv_expf``, ...).

The NVPTX backend lowers only a few math intrinsics itself (square root, absolute value,
rounding, fused multiply-add); everything else is a call into libdevice, linked into the module
before optimisation. It ships with every CUDA toolkit and in NVIDIA's pip wheels, so it is
looked for in this order: ``$SCHEDLANG_LIBDEVICE`` (a file), ``$CUDA_HOME`` / ``$CUDA_PATH``,
``/usr/local/cuda*``, the ``nvidia-cuda-nvcc`` wheels (CUDA 12 and 13 layouts), and Triton's
bundled copy. Packages are located with `importlib.util.find_spec`, never imported.

Where none is found, or ``SCHEDLANG_LIBDEVICE=none`` asks for it (read at every build, so a
test or a user can switch within one process), the CUDA target uses schedlang's own math
(`softmath`, accuracy in docs/math.md) instead.
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


NONE = "none"


def refused() -> bool:
    """Whether ``SCHEDLANG_LIBDEVICE=none`` asks for schedlang's own math."""
    return os.environ.get("SCHEDLANG_LIBDEVICE", "").strip().lower() == NONE


def candidates() -> list[Path]:
    """Every place libdevice is looked for, in order (for messages that say where)."""
    places: list[Path] = []
    explicit = os.environ.get("SCHEDLANG_LIBDEVICE")
    if explicit and not refused():
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


def find() -> Path | None:
    """The libdevice to link, or None (not found, or refused by ``SCHEDLANG_LIBDEVICE=none``)."""
    return None if refused() else _search(os.environ.get("SCHEDLANG_LIBDEVICE"))


@functools.cache
def _search(explicit: str | None) -> Path | None:
    """The first libdevice that exists (cached per value of the variable)."""
    del explicit  # the cache key: candidates() reads the variable itself
    for path in candidates():
        if path.is_file():
            return path
    return None


def bitcode() -> bytes | None:
    """The contents of `find()`."""
    path = find()
    return None if path is None else _read(path)


@functools.cache
def _read(path: Path) -> bytes:
    """Read once: every module that calls math links a copy."""
    return path.read_bytes()
