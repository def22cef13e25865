"""Which GPUs the 8-bit floats need: PTX converts them (``cvt.rn.satfinite.e4m3x2.f32``,
``cvt.rn.f16x2.e4m3x2``, which `codegen.llvm.float8` emits) from sm_89 (Ada, Hopper) on, and
LLVM's NVPTX backend aborts the whole process when asked for them on an older target, so a
kernel that touches one is refused for such a target before any code is generated."""

from __future__ import annotations

from ...errors import LoweringError
from ...ir import dtype as dt
from ...loopir.core.nodes import Allocate, LoweredFunc
from ...loopir.core.visit import stmt_exprs, walk_expr, walk_stmt

FIRST_ARCH = 89


def check_arch(func: LoweredFunc, arch: str) -> None:
    """A LoweringError when `func` reads, writes or computes an 8-bit float and `arch`
    (``sm_XY``, checked) predates sm_89."""
    if int(arch[3:].rstrip("af")) >= FIRST_ARCH:
        return
    used = _float8_dtype(func)
    if used is not None:
        raise LoweringError(
            f"{used} needs sm_{FIRST_ARCH} or newer (PTX converts 8-bit floats from Ada and "
            f"Hopper on), but the kernel '{func.name}' is compiled for {arch}; build it for "
            f"'cuda -arch=sm_{FIRST_ARCH}' or later, or convert the data to float16 first"
        )


def _float8_dtype(func: LoweredFunc) -> str | None:
    """The first 8-bit float dtype `func` uses, if any."""
    for buffer in func.params:
        if dt.is_float8(buffer.dtype):
            return buffer.dtype
    for s in walk_stmt(func.body):
        if isinstance(s, Allocate) and dt.is_float8(s.buffer.dtype):
            return s.buffer.dtype
        for e in stmt_exprs(s):
            for node in walk_expr(e):
                if dt.is_float8(node.dtype):
                    return node.dtype
    return None
