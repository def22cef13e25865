"""``tvm.topi.nn``: the operators TE templates build on (`pad`, `conv2d_nchw`), written as
TOPI writes them, so that a template's ``s[conv].op.input_tensors[0]`` is the padded input,
as AutoTVM's conv2d tutorial expects."""

from __future__ import annotations

import schedlang as _sl

from ...errors import AlgorithmError
from .utils import get_const_tuple


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput"):
    """`data` with `pad_before`/`pad_after` elements of `pad_value` around each dimension."""
    shape = get_const_tuple(data.shape)
    before = list(pad_before)
    after = list(pad_after if pad_after is not None else pad_before)
    if not len(before) == len(after) == len(shape):
        raise AlgorithmError(f"pad: {len(shape)} dimensions, {before} before and {after} after")
    padded = tuple(n + b + a for n, b, a in zip(shape, before, after))

    def value(*index):
        inside = [_sl.all(i >= b, i < n + b) for i, n, b in zip(index, shape, before) if b or n]
        source = data[tuple(i - b for i, b in zip(index, before))]
        if not any(before) and not any(after):
            return source
        return _sl.if_then_else(_sl.all(*inside), source, _sl.const(pad_value, data.dtype))

    return _sl.compute(padded, value, name=name)


def conv2d_nchw(Input, Filter, stride, padding, dilation=1, out_dtype=None):  # noqa: N803
    """A 2-D convolution of NCHW data with OIHW filters, through a padded copy of the input
    (``pad_temp``), summed over the input channels and the filter's rows and columns."""
    if dilation not in (1, (1, 1), [1, 1]):
        raise AlgorithmError(f"conv2d_nchw: dilation {dilation} (schedlang's TOPI has 1 only)")
    out_dtype = out_dtype or Input.dtype
    batch, channels, height, width = get_const_tuple(Input.shape)
    filters, _, rows, cols = get_const_tuple(Filter.shape)
    stride_h, stride_w = (stride, stride) if isinstance(stride, int) else stride
    pad_h, pad_w = (padding, padding) if isinstance(padding, int) else padding[:2]
    padded = pad(Input, [0, 0, pad_h, pad_w], [0, 0, pad_h, pad_w], name="pad_temp")
    out_h = (height + 2 * pad_h - rows) // stride_h + 1
    out_w = (width + 2 * pad_w - cols) // stride_w + 1
    rc = _sl.reduce_axis((0, channels), name="rc")
    ry = _sl.reduce_axis((0, rows), name="ry")
    rx = _sl.reduce_axis((0, cols), name="rx")
    return _sl.compute(
        (batch, filters, out_h, out_w),
        lambda nn, ff, yy, xx: _sl.sum(
            padded[nn, rc, yy * stride_h + ry, xx * stride_w + rx].astype(out_dtype)
            * Filter[ff, rc, ry, rx].astype(out_dtype),
            axis=[rc, ry, rx],
        ),
        name="conv2d_nchw",
    )
