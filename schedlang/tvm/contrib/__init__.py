"""``tvm.contrib``: the helpers TE programs use around building (`utils`, `cc`), and the BLAS
behind numpy as extern stages (`cblas`)."""

from . import cblas, cc, utils

__all__ = ["cblas", "cc", "utils"]
