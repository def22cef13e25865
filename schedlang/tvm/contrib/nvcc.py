"""``tvm.contrib.nvcc``: what TE programs ask about the CUDA GPU before building for it."""

from __future__ import annotations


def have_tensorcore(compute_version: str | None = None, target: object = None) -> bool:
    """Whether a GPU of `compute_version` (``"8.0"``) runs schedlang's tensor-core
    intrinsics: ``mma.sync.m16n8k16`` needs compute capability 8.0 or later (TVM's own
    answer starts at Volta's 7.0, whose wmma schedlang does not emit). None (no GPU) is
    False."""
    if not compute_version:
        return False
    major = int(str(compute_version).split(".")[0])
    return major >= 8
