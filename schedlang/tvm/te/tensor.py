"""``tvm.te.tensor``: the classes of TE's tensors and ops, which are schedlang's."""

from __future__ import annotations

from ...ir.extern import ExternOp
from ...ir.scan import ScanOp
from ...ir.tensor import ComputeOp, Operation, PlaceholderOp, Tensor

__all__ = ["ComputeOp", "ExternOp", "Operation", "PlaceholderOp", "ScanOp", "Tensor"]
