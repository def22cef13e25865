"""``tvm.topi.generic``: TOPI's generic (CPU) schedules of its operators."""

from .default import default_schedule
from .injective import (
    schedule_broadcast,
    schedule_elemwise,
    schedule_injective,
    schedule_injective_from_existing,
)
from .nn import (
    schedule_adaptive_pool,
    schedule_batch_matmul,
    schedule_conv2d_hwcn,
    schedule_conv2d_nchw,
    schedule_conv2d_transpose_nchw,
    schedule_dense,
    schedule_depthwise_conv2d_nchw,
    schedule_lrn,
    schedule_matmul,
    schedule_pool,
    schedule_reduce,
    schedule_softmax,
)

__all__ = [
    "default_schedule",
    "schedule_adaptive_pool",
    "schedule_batch_matmul",
    "schedule_broadcast",
    "schedule_conv2d_hwcn",
    "schedule_conv2d_nchw",
    "schedule_conv2d_transpose_nchw",
    "schedule_dense",
    "schedule_depthwise_conv2d_nchw",
    "schedule_elemwise",
    "schedule_injective",
    "schedule_injective_from_existing",
    "schedule_lrn",
    "schedule_matmul",
    "schedule_pool",
    "schedule_reduce",
    "schedule_softmax",
]
