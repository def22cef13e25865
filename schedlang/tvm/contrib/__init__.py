"""``tvm.contrib``: the helpers TE programs use around building (`utils`, `cc`, `nvcc`,
`clang`), and the BLAS behind numpy as extern stages (`cblas`)."""

from . import cblas, cc, clang, nvcc, utils

__all__ = ["cblas", "cc", "clang", "nvcc", "utils"]
