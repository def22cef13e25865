"""``tvm.contrib.nvcc``: what TE programs ask about the CUDA GPU before building for it."""

from __future__ import annotations

from ..target import as_target


def have_tensorcore(compute_version: str | None = None, target: object = None) -> bool:
    """Whether a GPU of `compute_version` (``"8.0"``) runs schedlang's tensor-core
    intrinsics: ``mma.sync.m16n8k16`` needs compute capability 8.0 or later (TVM's own
    answer starts at Volta's 7.0, whose wmma schedlang does not emit). Without a version,
    the `target`'s ``-arch=sm_XY``, else this machine's GPU; False where there is none."""
    if compute_version is None and target is not None:
        arch = as_target(target).arch or ""
        compute_version = f"{arch[3:-1]}.{arch[-1]}" if arch.startswith("sm_") else None
    if compute_version is None:
        from ..runtime import cuda

        compute_version = cuda(0).compute_version
    if not compute_version:
        return False
    major = int(str(compute_version).split(".")[0])
    return major >= 8
