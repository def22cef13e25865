"""``topi.nn.depthwise_conv2d_nchw``: each input channel convolved with its own
`channel_multiplier` filters (filter shape [in_channel, channel_multiplier, h, w]), through a
padded copy (``PadInput``), in ``DepthwiseConv2d`` tagged "depthwise_conv2d_nchw"."""

from __future__ import annotations

import schedlang as _sl

from ..utils import simplified
from .pad import pad
from .utils import get_pad_tuple, pair


def depthwise_conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype=None):  # noqa: N803
    out_dtype = out_dtype or Input.dtype
    stride_h, stride_w = pair(stride, "stride")
    dilation_h, dilation_w = pair(dilation, "dilation")
    batch, channels, height, width = Input.shape
    _, multiplier, rows, cols = Filter.shape
    kernel_h, kernel_w = (rows - 1) * dilation_h + 1, (cols - 1) * dilation_w + 1
    top, left, bottom, right = get_pad_tuple(padding, (kernel_h, kernel_w))
    padded = pad(Input, [0, 0, top, left], [0, 0, bottom, right], name="PaddedInput")
    out_h = (height - kernel_h + top + bottom) // stride_h + 1
    out_w = (width - kernel_w + left + right) // stride_w + 1
    di = _sl.reduce_axis((0, rows), name="di")
    dj = _sl.reduce_axis((0, cols), name="dj")
    return _sl.compute(
        simplified((batch, channels * multiplier, out_h, out_w)),
        lambda b, c, i, j: _sl.sum(
            padded[
                b, c // multiplier, i * stride_h + di * dilation_h, j * stride_w + dj * dilation_w
            ].astype(out_dtype)
            * Filter[c // multiplier, c % multiplier, di, dj].astype(out_dtype),
            axis=[di, dj],
        ),
        name="DepthwiseConv2d",
        tag="depthwise_conv2d_nchw",
    )
