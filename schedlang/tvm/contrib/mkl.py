"""``tvm.contrib.mkl``: Intel MKL's matrix products, which schedlang does not link (every call
is refused); ``tvm.contrib.cblas`` computes the same products with the BLAS behind numpy."""

from __future__ import annotations

from .unlinked import refusing

_INSTEAD = "use tvm.contrib.cblas (the BLAS behind numpy) or topi's te computes"
matmul = refusing("Intel MKL", "mkl.matmul", _INSTEAD)
matmul_u8s8s32 = refusing("Intel MKL", "mkl.matmul_u8s8s32", _INSTEAD)
batch_matmul = refusing("Intel MKL", "mkl.batch_matmul", _INSTEAD)
