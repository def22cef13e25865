"""``tvm.te.tensor``: the classes of tensors and operations, which TOPI's schedules test ops
against (``isinstance(op, te.tensor.ComputeOp)``)."""

from schedlang.ir.tensor import ComputeOp, PlaceholderOp, Tensor

__all__ = ["ComputeOp", "PlaceholderOp", "Tensor"]
