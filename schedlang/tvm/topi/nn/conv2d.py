"""``topi.nn.conv2d_nchw``: a 2-D convolution of NCHW data with OIHW filters, through a padded
copy of the input (``pad_temp``), summed over the input channels and the filter's rows and
columns, in a compute named and tagged ``conv2d_nchw`` (so that a template's
``s[conv].op.input_tensors[0]`` is the padded input, as AutoTVM's conv2d tutorial expects).
``conv2d_hwcn`` is the same sum over HWCN data and HWIO filters (TE's TEDD tutorial's)."""

from __future__ import annotations

import schedlang as _sl

from ..utils import simplified
from .pad import pad
from .utils import get_pad_tuple, pair


def conv2d_nchw(Input, Filter, stride, padding, dilation=1, out_dtype=None):  # noqa: N803
    out_dtype = out_dtype or Input.dtype
    batch, channels, height, width = Input.shape
    filters, _, rows, cols = Filter.shape
    (stride_h, stride_w), (dilation_h, dilation_w), (top, left, bottom, right), (out_h, out_w) = (
        _window(stride, padding, dilation, (height, width), (rows, cols))
    )
    padded = pad(Input, [0, 0, top, left], [0, 0, bottom, right], name="pad_temp")
    rc = _sl.reduce_axis((0, channels), name="rc")
    ry = _sl.reduce_axis((0, rows), name="ry")
    rx = _sl.reduce_axis((0, cols), name="rx")
    return _sl.compute(
        simplified((batch, filters, out_h, out_w)),
        lambda nn, ff, yy, xx: _sl.sum(
            padded[nn, rc, yy * stride_h + ry * dilation_h, xx * stride_w + rx * dilation_w].astype(
                out_dtype
            )
            * Filter[ff, rc, ry, rx].astype(out_dtype),
            axis=[rc, ry, rx],
        ),
        name="conv2d_nchw",
        tag="conv2d_nchw",
    )


def conv2d_hwcn(Input, Filter, stride, padding, dilation=1, out_dtype=None):  # noqa: N803
    out_dtype = out_dtype or Input.dtype
    height, width, channels, _ = Input.shape
    rows, cols, _, filters = Filter.shape
    (stride_h, stride_w), (dilation_h, dilation_w), (top, left, bottom, right), (out_h, out_w) = (
        _window(stride, padding, dilation, (height, width), (rows, cols))
    )
    padded = pad(Input, [top, left, 0, 0], [bottom, right, 0, 0], name="PaddedInput")
    rc = _sl.reduce_axis((0, channels), name="rc")
    ry = _sl.reduce_axis((0, rows), name="ry")
    rx = _sl.reduce_axis((0, cols), name="rx")
    return _sl.compute(
        simplified((out_h, out_w, filters, Input.shape[3])),
        lambda yy, xx, ff, nn: _sl.sum(
            padded[yy * stride_h + ry * dilation_h, xx * stride_w + rx * dilation_w, rc, nn].astype(
                out_dtype
            )
            * Filter[ry, rx, rc, ff].astype(out_dtype),
            axis=[ry, rx, rc],
        ),
        name="Conv2dOutput",
        tag="conv2d_hwcn",
    )


def _window(stride, padding, dilation, image, window):
    """``(stride, dilation, padding, out)`` of a `window` (rows, columns) sliding over an
    `image` (height, width): each a pair but the padding (top, left, bottom, right)."""
    (height, width), (rows, cols) = image, window
    stride_h, stride_w = pair(stride, "stride")
    dilation_h, dilation_w = pair(dilation, "dilation")
    top, left, bottom, right = get_pad_tuple(
        padding, ((rows - 1) * dilation_h + 1, (cols - 1) * dilation_w + 1)
    )
    out_h = (height - (rows - 1) * dilation_h - 1 + top + bottom) // stride_h + 1
    out_w = (width - (cols - 1) * dilation_w - 1 + left + right) // stride_w + 1
    pads = (top, left, bottom, right)
    return (stride_h, stride_w), (dilation_h, dilation_w), pads, (out_h, out_w)


def conv2d(
    input,  # noqa: A002 - TOPI's name
    filter,  # noqa: A002
    strides,
    padding,
    dilation,
    data_layout="NCHW",
    kernel_layout="",
    out_dtype=None,
):
    """TOPI's ``conv2d`` by layout; schedlang's TOPI has the NCHW (OIHW filters) one."""
    if data_layout != "NCHW" or kernel_layout not in ("", "OIHW"):
        raise _sl.AlgorithmError(
            f"topi.nn.conv2d: layout {data_layout}/{kernel_layout or 'OIHW'} is not supported; "
            "schedlang's TOPI has conv2d for NCHW data and OIHW filters (conv2d_nchw)"
        )
    return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype)
