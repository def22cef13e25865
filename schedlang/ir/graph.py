"""The dataflow graph of ops: which ops an output depends on, in an order that evaluates them."""

from __future__ import annotations

from collections.abc import Iterable

from .tensor import Operation


def together(op: Operation) -> tuple[Operation, ...]:
    """`op` and the other outputs of its compute (a multi-output compute's are computed in
    one loop nest), as created."""
    outputs = getattr(op, "outputs", None)
    return (op,) if outputs is None else outputs.ops


def post_order(roots: Iterable[Operation]) -> list[Operation]:
    """Every op the `roots` depend on (roots included), each after all of its inputs. The
    outputs of a multi-output compute come together, after the inputs of all of them."""
    order: list[Operation] = []
    done: set[Operation] = set()
    for root in roots:
        stack: list[tuple[Operation, bool]] = [(root, False)]
        while stack:
            op, expanded = stack.pop()
            if op in done:
                continue
            group = together(op)
            if expanded:
                done.update(group)
                order.extend(group)
                continue
            stack.append((op, True))
            ordered = getattr(op, "group_inputs", None)  # a scan orders its states' steps
            inputs = ordered() if ordered else [t for m in group for t in m.input_tensors]
            for tensor in reversed(inputs):
                if tensor.op not in done:
                    stack.append((tensor.op, False))
    return order
