"""``tvm.contrib``: the helpers TE programs use around building (`utils`, `cc`, `nvcc`,
`clang`), and the BLAS behind numpy as extern stages (`cblas`); `cublas`, `cudnn`, `dnnl` and
`mkl` name libraries schedlang does not link, and refuse every call."""

from . import cblas, cc, clang, cublas, cudnn, dnnl, mkl, nvcc, utils

__all__ = ["cblas", "cc", "clang", "cublas", "cudnn", "dnnl", "mkl", "nvcc", "utils"]
