"""``tvm.topi.tag``: the tags TOPI gives its computes, which its schedules dispatch on
(``tag.is_injective(op.tag)`` inlines an operator, ``"comm_reduce"`` marks a reduction)."""

from __future__ import annotations

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"
MATMUL = "matmul"


def is_broadcast(tag: str) -> bool:
    """Whether `tag` marks an element-wise or broadcasting operator (or one of their kinds)."""
    return tag in (ELEMWISE, BROADCAST) or tag.startswith((ELEMWISE + ",", BROADCAST + ","))


def is_injective(tag: str) -> bool:
    """Whether each output element of an operator tagged `tag` reads at most one element of
    each input, so that a schedule may inline it."""
    return is_broadcast(tag) or tag == INJECTIVE or tag.startswith(INJECTIVE + ",")
