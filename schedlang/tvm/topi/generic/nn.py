"""TOPI's generic schedules of its `nn` operators on the CPU: TE's default schedule, except
for reductions, whose injective stages are inlined and whose output loops are fused."""

from __future__ import annotations

from .default import default_schedule


def schedule_reduce(outs):
    return default_schedule(outs, auto_inline=True)


def _plain(outs):
    return default_schedule(outs, auto_inline=False)


schedule_softmax = _plain
schedule_dense = _plain
schedule_matmul = _plain
schedule_batch_matmul = _plain
schedule_conv2d_nchw = _plain
schedule_conv2d_hwcn = _plain
schedule_depthwise_conv2d_nchw = _plain
schedule_conv2d_transpose_nchw = _plain
schedule_adaptive_pool = _plain
schedule_lrn = _plain


def schedule_pool(outs, layout):
    """The schedule of pooling in `layout` (TOPI's generic one does not read it)."""
    return default_schedule(outs, auto_inline=False)
