"""``tvm.contrib.cublas``: cuBLAS's matrix products, which schedlang does not link (every call
is refused); TOPI's CUDA computes and schedules of the same products build."""

from __future__ import annotations

from .unlinked import refusing

_INSTEAD = "use TOPI's te computes and CUDA schedules (topi.cuda.dense_small_batch, ...) instead"
matmul = refusing("cuBLAS", "cublas.matmul", _INSTEAD)
batch_matmul = refusing("cuBLAS", "cublas.batch_matmul", _INSTEAD)
