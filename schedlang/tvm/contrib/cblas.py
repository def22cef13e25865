"""``tvm.contrib.cblas``: matrix products as extern stages calling the BLAS behind numpy."""

from __future__ import annotations

import schedlang as _sl

from ...ir.packed import get_global_func, register_func

register_func("tvm.contrib.cblas.matmul", get_global_func("blas.matmul"), override=True)
register_func("tvm.contrib.cblas.batch_matmul", get_global_func("blas.batch_matmul"), override=True)


def matmul(lhs, rhs, transa: bool = False, transb: bool = False, **_) -> _sl.Tensor:
    """``lhs @ rhs`` (each transposed when asked) as an extern stage."""
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return _sl.extern(
        (n, m),
        [lhs, rhs],
        lambda ins, outs: _sl.call_packed(
            "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], transa, transb
        ),
        name="C",
    )


def batch_matmul(lhs, rhs, transa: bool = False, transb: bool = False, **_) -> _sl.Tensor:
    """The products of the matrices of two batches (each transposed when asked)."""
    b = lhs.shape[0]
    n = lhs.shape[2] if transa else lhs.shape[1]
    m = rhs.shape[1] if transb else rhs.shape[2]
    return _sl.extern(
        (b, n, m),
        [lhs, rhs],
        lambda ins, outs: _sl.call_packed(
            "tvm.contrib.cblas.batch_matmul", ins[0], ins[1], outs[0], transa, transb
        ),
        name="C",
    )
