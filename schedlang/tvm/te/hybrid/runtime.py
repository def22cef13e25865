"""``tvm.te.hybrid.runtime``: the names a hybrid script's body uses when it runs as Python."""

from ....ir.hybrid.runtime import HYBRID_GLOBALS

__all__ = ["HYBRID_GLOBALS"]
