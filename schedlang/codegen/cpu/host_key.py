"""The host's code key (`jit.Host.key`: triple, CPU name and features as LLVM sees them)
without starting LLVM, where this machine's answer is in the disk cache.

Every cached CPU build is filed under that key, and asking LLVM for it means importing
``llvmlite.binding``, the largest cost of a kernel revived from disk. The answer depends only
on the processor and on LLVM, so it is kept on disk under what the kernel reports of the
processor (``/proc/cpuinfo``'s vendor, family, model, stepping and feature flags) and LLVM's
version; on another machine, a new LLVM, or without the disk cache, LLVM is asked.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from llvmlite import __version__ as llvmlite_version

from .. import disk_cache

CPUINFO = "/proc/cpuinfo"
IDENTIFYING = ("vendor_id", "cpu family", "model", "model name", "stepping", "flags", "Features")


@functools.cache
def host_key() -> str:
    path = _disk_path()

    def asked() -> bytes:
        from . import jit

        return jit.host().key.encode()

    return disk_cache.load_or_make(path, asked).decode()


def _disk_path() -> Path | None:
    folder = disk_cache.directory()
    processor = _processor()
    if folder is None or processor is None:
        return None
    made_from = f"{processor}\n{os.uname().machine}\nllvmlite {llvmlite_version}"
    return folder / f"host-{hashlib.sha256(made_from.encode()).hexdigest()}.txt"


def _processor() -> str | None:
    """The first processor's identifying lines, or None where the kernel does not say."""
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as info:
            first = info.read(1 << 16).split("\n\n")[0]
    except OSError:
        return None
    lines = [line for line in first.splitlines() if line.split(":")[0].strip() in IDENTIFYING]
    if not any(line.startswith(("flags", "Features")) for line in lines):
        return None  # no feature list: nothing tells two processors apart
    return "\n".join(lines)
