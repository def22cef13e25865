"""``tvm.contrib.dnnl``: oneDNN's operators, which schedlang does not link (every call is
refused); TOPI's own computes of the same operators build."""

from __future__ import annotations

from .unlinked import refusing

_INSTEAD = "compute the operator with TOPI's te computes (topi.nn, topi.x86) instead"
matmul = refusing("oneDNN (DNNL)", "dnnl.matmul", _INSTEAD)
dnnl_conv2d = refusing("oneDNN (DNNL)", "dnnl.dnnl_conv2d", _INSTEAD)
