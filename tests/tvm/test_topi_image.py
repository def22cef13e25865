"""``topi.image.resize2d`` on schedlang against numpy: each output pixel's source position by
the coordinate transformation mode, the pixels around it clamped to the image. Positions are
computed in floating point, so the kernels read at data-dependent indices, except
nearest-neighbour resizing by an integer factor in "asymmetric" mode."""

from __future__ import annotations

import numpy as np
import pytest

from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

from .topi_check import check, check_definition, random

DATA = (2, 3, 5, 7)
ROI = (0.0, 0.0, 0.0, 0.0)


def _positions(out, size, mode):
    x = np.arange(out, dtype="float32")
    scale = np.float32(size / out)
    if mode == "half_pixel":
        return (x + 0.5) * scale - 0.5
    if mode == "align_corners":
        return np.float32((size - 1) / (out - 1)) * x
    return x * scale


def _resize(d, out_h, out_w, method, mode):
    """Resize of NCHW `d` in numpy, from the definition."""
    ys, xs = _positions(out_h, d.shape[2], mode), _positions(out_w, d.shape[3], mode)

    def pixels(rows, cols):
        rows = np.clip(rows, 0, d.shape[2] - 1)
        cols = np.clip(cols, 0, d.shape[3] - 1)
        return d[:, :, rows[:, None], cols[None, :]]

    if method == "nearest_neighbor":
        pick = np.round if mode == "align_corners" else (lambda v: np.floor(v + 1e-5))
        return pixels(pick(ys).astype(int), pick(xs).astype(int))
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    ty, tx = (ys - y0)[:, None], (xs - x0)[None, :]
    if method == "linear":
        top = pixels(y0, x0) * (1 - tx) + pixels(y0, x0 + 1) * tx
        bottom = pixels(y0 + 1, x0) * (1 - tx) + pixels(y0 + 1, x0 + 1) * tx
        return top * (1 - ty) + bottom * ty

    def weights(t, a=-0.5):
        return [
            a * (t**3 - 2 * t**2 + t),
            (a + 2) * t**3 - (3 + a) * t**2 + 1,
            -(a + 2) * t**3 + (3 + 2 * a) * t**2 - a * t,
            -a * t**3 + a * t**2,
        ]

    wy, wx = weights(ty), weights(tx)
    return sum(pixels(y0 + j - 1, x0 + i - 1) * wy[j] * wx[i] for j in range(4) for i in range(4))


def test_nearest_neighbour_enlargement_by_an_integer_factor_builds():
    D = te.placeholder(DATA, name="D")
    d = random(DATA)
    out = topi.image.resize2d(
        D, ROI, (10, 21), method="nearest_neighbor", coordinate_transformation_mode="asymmetric"
    )
    assert (out.name, out.op.tag) == ("resize", "injective")
    check(out, [D], [d], d.repeat(2, axis=2).repeat(3, axis=3))


CASES = [
    ("nearest_neighbor", "align_corners"),
    ("nearest_neighbor", "half_pixel"),
    ("linear", "half_pixel"),
    ("linear", "align_corners"),
    ("cubic", "half_pixel"),
]


@pytest.mark.parametrize("method, mode", CASES)
def test_resize2d_is_defined_as_topi_defines_it(method, mode):
    D = te.placeholder(DATA, name="D")
    d = random(DATA)
    out = topi.image.resize2d(D, ROI, (8, 4), method=method, coordinate_transformation_mode=mode)
    check_definition(out, [D], [d], _resize(d, 8, 4, method, mode), atol=1e-5)


@pytest.mark.parametrize("method, mode", CASES)
def test_resize2d_at_computed_positions_builds(method, mode):
    D = te.placeholder(DATA, name="D")
    d = random(DATA)
    out = topi.image.resize2d(D, ROI, (8, 4), method=method, coordinate_transformation_mode=mode)
    check(out, [D], [d], _resize(d, 8, 4, method, mode), atol=1e-5)


def test_unknown_methods_and_layouts_are_refused():
    D = te.placeholder(DATA, name="D")
    with pytest.raises(AlgorithmError, match="unknown method 'area'"):
        topi.image.resize2d(D, ROI, (8, 4), method="area")
    with pytest.raises(AlgorithmError, match="layout 'NCHW4c'"):
        topi.image.resize2d(D, ROI, (8, 4), layout="NCHW4c")
