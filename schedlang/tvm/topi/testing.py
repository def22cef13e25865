"""``tvm.topi.testing``: numpy references that TE tutorials check their kernels with, and the
schedule functions TE tests pick by target."""

from __future__ import annotations

import numpy as np

from . import generic, nn


def conv2d_nchw_python(a_np, w_np, stride, padding):
    """The convolution of `tvm.topi.nn.conv2d_nchw`, in numpy (float64 sums)."""
    batch, channels, height, width = a_np.shape
    filters, _, rows, cols = w_np.shape
    stride_h, stride_w = (stride, stride) if isinstance(stride, int) else stride
    pad_h, pad_w = (padding, padding) if isinstance(padding, int) else padding[:2]
    padded = np.pad(a_np, ((0, 0), (0, 0), (pad_h, pad_h), (pad_w, pad_w)))
    out_h = (height + 2 * pad_h - rows) // stride_h + 1
    out_w = (width + 2 * pad_w - cols) // stride_w + 1
    out = np.zeros((batch, filters, out_h, out_w))
    for y in range(rows):
        for x in range(cols):
            window = padded[
                :, :, y : y + stride_h * out_h : stride_h, x : x + stride_w * out_w : stride_w
            ]
            out += np.einsum("nchw,fc->nfhw", window, w_np[:, :, y, x], dtype=np.float64)
    return out.astype(a_np.dtype)


def conv2d_nhwc_python(a_np, w_np, stride, padding):
    """The convolution of `tvm.topi.nn.conv2d_nhwc` (data NHWC, weights HWIO), in numpy: the
    NCHW one over transposed arrays."""
    data, weights = a_np.transpose(0, 3, 1, 2), w_np.transpose(3, 2, 0, 1)
    nchw = conv2d_nchw_python(data, weights, stride, padding)
    return nchw.transpose(0, 2, 3, 1)


def get_injective_schedule(target):
    """The schedule function of injective operators for `target`: schedlang's TOPI has TOPI's
    generic (CPU) schedules, which every target gets (they refuse one that is not the CPU)."""
    return generic.schedule_injective


get_broadcast_schedule = get_injective_schedule
get_elemwise_schedule = get_injective_schedule


def get_reduce_schedule(target):
    """The schedule function of reductions for `target` (see `get_injective_schedule`)."""
    return generic.schedule_reduce


def get_conv2d_nchw_implement(target):
    """The compute and schedule of an NCHW convolution for `target` (see
    `get_injective_schedule`)."""
    return nn.conv2d_nchw, generic.schedule_conv2d_nchw
