"""The dataflow graph of ops: which ops an output depends on, in an order that evaluates them."""

from __future__ import annotations

from collections.abc import Iterable

from .tensor import Operation


def post_order(roots: Iterable[Operation]) -> list[Operation]:
    """Every op the `roots` depend on (roots included), each after all of its inputs."""
    order: list[Operation] = []
    done: set[Operation] = set()
    for root in roots:
        stack: list[tuple[Operation, bool]] = [(root, False)]
        while stack:
            op, expanded = stack.pop()
            if op in done:
                continue
            if expanded:
                done.add(op)
                order.append(op)
                continue
            stack.append((op, True))
            for tensor in reversed(op.input_tensors):
                if tensor.op not in done:
                    stack.append((tensor.op, False))
    return order
