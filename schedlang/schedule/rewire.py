"""Pointing reads at another op: how schedule-level rewrites of the dataflow graph propagate."""

from __future__ import annotations

from ..ir.expr import Expr, Read
from ..ir.tensor import Operation, Tensor
from ..ir.visit import transform


def reads_of(old: Operation, body: Expr, new: Operation) -> Expr:
    """`body` with every read of `old` reading `new` (same indices) instead."""
    target = Tensor(new)

    def swap(node: Expr) -> Expr | None:
        if isinstance(node, Read) and node.tensor.op is old:
            return Read(target, node.indices, node.dtype)
        return None

    return transform(body, swap)
