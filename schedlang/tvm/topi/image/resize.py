"""``topi.image.resize2d``: images resized by nearest-neighbour, bilinear or bicubic
interpolation, as TOPI computes it: each output pixel's position in the input (by
`coordinate_transformation_mode`) in float32, the pixels around it read clamped to the image,
and the result cast back to the data's dtype (``resize``, tagged "injective").

The input positions are computed in floating point, so the reads are at data-dependent
indices, except nearest-neighbour "asymmetric" resizing by an integer factor, which TOPI
computes by integer division."""

from __future__ import annotations

import schedlang as _sl

from ....errors import AlgorithmError
from ..tag import INJECTIVE
from ..utils import const_value

_F = "float32"


def _source_position(x, image, target, mode, start, end):
    """Where output index `x` falls in the input, in input pixels (float32)."""
    xf, image_f, target_f = _float(x), _float(image), _float(target)
    scale = image_f / target_f
    if mode == "half_pixel":
        return (xf + 0.5) * scale - 0.5
    if mode == "align_corners":
        return (image_f - 1) / (target_f - 1) * xf
    if mode == "asymmetric":
        return scale * xf
    if mode == "pytorch_half_pixel":
        return _sl.if_then_else(target_f > 1, (xf + 0.5) * scale - 0.5, _sl.const(0.0, _F))
    if mode == "tf_half_pixel_for_nn":
        return (xf + 0.5) * scale
    if mode == "tf_crop_and_resize":
        inside = start * (image_f - 1) + xf * (end - start) * (image_f - 1) / (target_f - 1)
        middle = _sl.const(0.5 * (start + end), _F) * (image_f - 1)
        return _sl.if_then_else(target_f > 1, inside, middle)
    raise AlgorithmError(f"resize2d: unknown coordinate_transformation_mode '{mode}'")


def _float(value):
    return _sl.const(value, _F) if isinstance(value, (int, float)) else value.astype(_F)


def _integer_factor(image, target) -> int | None:
    """The integer factor of an enlargement by a constant whole factor (TOPI then computes
    nearest-neighbour "asymmetric" positions by integer division), else None."""
    image, target = const_value(image), const_value(target)
    if image is None or target is None or target % image:
        return None
    factor = target // image
    return factor if factor <= 1 / (1e-5 * image + 1e-5) else None


_ROUNDING = {
    "round": lambda v: _sl.round(v),
    "round_prefer_floor": lambda v: _sl.ceil(v - 0.5),
    "round_prefer_ceil": lambda v: _sl.floor(v + 0.5),
    "floor": lambda v: _sl.floor(v + 1e-5),
    "ceil": lambda v: _sl.ceil(v - 1e-5),
}


def _cubic_weights(t, alpha):
    t2, t3 = t * t, t * t * t
    return [
        alpha * (t3 - 2 * t2 + t),
        (alpha + 2) * t3 - (3 + alpha) * t2 + 1,
        -(alpha + 2) * t3 + (3 + 2 * alpha) * t2 - alpha * t,
        -alpha * t3 + alpha * t2,
    ]


def resize2d(
    data,
    roi,
    size,
    layout="NCHW",
    method="linear",
    coordinate_transformation_mode="half_pixel",
    rounding_method="",
    bicubic_alpha=-0.5,
    bicubic_exclude=0,
    extrapolation_value=0.0,
    out_dtype=None,
    output_shape=None,
):
    """`data` (NCHW or NHWC) resized to `size` (height, width) by `method`: "nearest_neighbor",
    "linear" or "cubic"; `roi` (start_h, start_w, end_h, end_w) is read by the
    "tf_crop_and_resize" mode only."""
    if layout not in ("NCHW", "NHWC"):
        raise AlgorithmError(f"resize2d: layout '{layout}' (schedlang has NCHW and NHWC)")
    method = method.lower()
    if method not in ("nearest_neighbor", "linear", "cubic"):
        raise AlgorithmError(f"resize2d: unknown method '{method}'")
    mode = coordinate_transformation_mode
    h_axis, w_axis = (2, 3) if layout == "NCHW" else (1, 2)
    height, width = data.shape[h_axis], data.shape[w_axis]
    if output_shape is None:
        output_shape = list(data.shape)
        output_shape[h_axis], output_shape[w_axis] = size[0], size[1]
    if method == "nearest_neighbor" and not rounding_method:
        rounding_method = "round" if mode == "align_corners" else "floor"
    alpha = bicubic_alpha

    def pixel(index, y, x):
        y = _sl.maximum(_sl.minimum(y, height - 1), 0)
        x = _sl.maximum(_sl.minimum(x, width - 1), 0)
        where = list(index)
        where[h_axis], where[w_axis] = y, x
        return data[tuple(where)].astype(_F)

    def nearest(index, y, x, in_y, in_x):
        factors = [
            _integer_factor(height, size[0]) if mode == "asymmetric" else None,
            _integer_factor(width, size[1]) if mode == "asymmetric" else None,
        ]
        if rounding_method not in _ROUNDING:
            raise AlgorithmError(f"resize2d: unknown rounding_method '{rounding_method}'")
        rounded = [
            o // f if f else _ROUNDING[rounding_method](p).astype("int32")
            for o, f, p in zip((y, x), factors, (in_y, in_x))
        ]
        return pixel(index, *rounded)

    def linear(index, in_y, in_x):
        y0 = _sl.floor(in_y).astype("int32")
        x0 = _sl.floor(in_x).astype("int32")
        ty, tx = in_y - y0.astype(_F), in_x - x0.astype(_F)

        def lerp(a, b, t):
            return a * (1.0 - t) + b * t

        top = lerp(pixel(index, y0, x0), pixel(index, y0, x0 + 1), tx)
        bottom = lerp(pixel(index, y0 + 1, x0), pixel(index, y0 + 1, x0 + 1), tx)
        return lerp(top, bottom, ty)

    def cubic(index, in_y, in_x):
        y0 = _sl.floor(in_y).astype("int32")
        x0 = _sl.floor(in_x).astype("int32")
        wy = _cubic_weights(in_y - _sl.floor(in_y), alpha)
        wx = _cubic_weights(in_x - _sl.floor(in_x), alpha)
        if bicubic_exclude:
            zero = _sl.const(0.0, _F)
            wx = [_sl.if_then_else(_sl.any(x0 + i - 1 < 0, x0 + i > width), zero, w)
                  for i, w in enumerate(wx)]  # fmt: skip
            wy = [_sl.if_then_else(_sl.any(y0 + i - 1 < 0, y0 + i > height), zero, w)
                  for i, w in enumerate(wy)]  # fmt: skip
            wx = [w / (wx[0] + wx[1] + wx[2] + wx[3]) for w in wx]
            wy = [w / (wy[0] + wy[1] + wy[2] + wy[3]) for w in wy]
        rows = []
        for j in range(4):
            taps = [pixel(index, y0 + j - 1, x0 + i - 1) * wx[i] for i in range(4)]
            rows.append(taps[0] + taps[1] + taps[2] + taps[3])
        return rows[0] * wy[0] + rows[1] * wy[1] + rows[2] * wy[2] + rows[3] * wy[3]

    def value(*index):
        y, x = index[h_axis], index[w_axis]
        in_y = _source_position(y, height, size[0], mode, roi[0], roi[2])
        in_x = _source_position(x, width, size[1], mode, roi[1], roi[3])
        if method == "nearest_neighbor":
            result = nearest(index, y, x, in_y, in_x)
        elif method == "linear":
            result = linear(index, in_y, in_x)
        else:
            result = cubic(index, in_y, in_x)
        if mode == "tf_crop_and_resize":
            fill = _sl.const(extrapolation_value, _F)
            outside = _sl.any(
                in_y < 0, in_y > _float(height - 1), in_x < 0, in_x > _float(width - 1)
            )
            result = _sl.if_then_else(outside, fill, result)
        return result.astype(out_dtype or data.dtype)

    return _sl.compute(tuple(output_shape), value, name="resize", tag=INJECTIVE)
