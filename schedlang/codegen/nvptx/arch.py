"""GPU architectures as the cuda target names them (``sm_90``, ``sm_90a``), and the PTX ISA
version emitted for each; apart from the compiler, so that naming one needs no LLVM."""

from __future__ import annotations

import re

from ...errors import LoweringError

DEFAULT_ARCH = "sm_90"
_ARCH = re.compile(r"sm_(\d+)([af]?)")
_PTX_FOR_NEWER = ((100, 86), (120, 87))  # (first architecture, PTX ISA) beyond sm_90


def check_arch(arch: str) -> str:
    """`arch` when it names a GPU architecture (``sm_80``, ``sm_90a``); else a LoweringError."""
    if not _ARCH.fullmatch(arch):
        raise LoweringError(
            f"unknown CUDA architecture {arch!r}; write it as sm_XY, e.g. 'cuda -arch=sm_90'"
        )
    return arch


def ptx_version(arch: str) -> int:
    """The PTX ISA version (times ten) emitted for `arch`. sm_89 gets 8.1: LLVM's NVPTX
    backend converts 8-bit floats for it from that version on (for sm_90 from 8.0)."""
    number = int(check_arch(arch)[3:].rstrip("af"))
    version = 81 if number == 89 else 80
    for first, isa in _PTX_FOR_NEWER:
        if number >= first:
            version = isa
    return version
