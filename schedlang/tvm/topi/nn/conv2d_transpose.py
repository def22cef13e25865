"""``topi.nn.conv2d_transpose_nchw`` (a "deconvolution"): the input dilated by the strides
(``data_dilate``), padded (``data_pad``) and convolved with the filter turned by 180 degrees
and its in/out channels swapped (``kernel_transform``), tagged "conv2d_transpose_nchw"."""

from __future__ import annotations

import schedlang as _sl

from ....errors import AlgorithmError
from ..utils import simplified
from .dilate import dilate
from .pad import pad
from .utils import get_pad_tuple, pair


def conv2d_transpose_nchw(Input, Filter, strides, padding, out_dtype, output_padding):  # noqa: N803
    """Filter shape [in_channel, num_filter, h, w]; `output_padding` (below the strides) adds
    rows and columns at the bottom and right of the output."""
    stride_h, stride_w = pair(strides, "strides")
    extra_h, extra_w = pair(output_padding, "output_padding")
    if not (extra_h < stride_h and extra_w < stride_w):
        raise AlgorithmError(
            f"conv2d_transpose_nchw: output_padding {output_padding} must be below the "
            f"strides {strides}"
        )
    in_channels, filters, rows, cols = Filter.shape
    dilated = dilate(Input, [1, 1, stride_h, stride_w], name="data_dilate")
    top, left, bottom, right = get_pad_tuple(padding, (rows, cols))
    padded = pad(
        dilated,
        [0, 0, rows - 1 - top, cols - 1 - left],
        [0, 0, rows - 1 - bottom + extra_h, cols - 1 - right + extra_w],
        name="data_pad",
    )
    kernel = _sl.compute(
        (filters, in_channels, rows, cols),
        lambda o, i, h, w: Filter[i, o, rows - 1 - h, cols - 1 - w],
        name="kernel_transform",
    )
    batch, _, height, width = padded.shape
    dc = _sl.reduce_axis((0, in_channels), name="dc")
    dh = _sl.reduce_axis((0, rows), name="dh")
    dw = _sl.reduce_axis((0, cols), name="dw")
    return _sl.compute(
        simplified((batch, filters, height - rows + 1, width - cols + 1)),
        lambda b, c, h, w: _sl.sum(
            padded[b, dc, h + dh, w + dw].astype(out_dtype)
            * kernel[c, dc, dh, dw].astype(out_dtype),
            axis=[dc, dh, dw],
        ),
        tag="conv2d_transpose_nchw",
    )
