"""TOPI's pooling on schedlang (``topi.nn.pool2d`` max and average, with padding, dilation,
ceil_mode and count_include_pad; global and adaptive pooling) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

from .topi_check import check, random

DATA = (2, 3, 9, 11)


def _pool2d(x, kernel, stride, dilation, pad, kind, ceil_mode, count_include_pad):
    """Pooling of NCHW `x` element by element, from the definition; a window wholly in the
    padding is the dtype's lowest value (max) or 0 (average), as in TOPI."""
    top, left, bottom, right = pad
    sizes = []
    for n, k, s, d, before, after in zip(
        x.shape[2:], kernel, stride, dilation, (top, left), (bottom, right)
    ):
        span = n + before + after - (k - 1) * d - 1
        sizes.append((span + (s - 1 if ceil_mode else 0)) // s + 1)
    out = np.zeros(x.shape[:2] + tuple(sizes), "float64")
    for i in range(sizes[0]):
        for j in range(sizes[1]):
            rows = [i * stride[0] - top + a * dilation[0] for a in range(kernel[0])]
            cols = [j * stride[1] - left + b * dilation[1] for b in range(kernel[1])]
            inside = [
                (r, c) for r in rows for c in cols if 0 <= r < x.shape[2] and 0 <= c < x.shape[3]
            ]
            if not inside:  # a window wholly in the padding that ceil_mode adds
                out[:, :, i, j] = np.finfo("float32").min if kind == "max" else 0.0
                continue
            values = np.stack([x[:, :, r, c] for r, c in inside], -1)
            if kind == "max":
                out[:, :, i, j] = values.max(-1)
                continue
            if count_include_pad:
                bottom_edge = x.shape[2] + bottom - 1
                right_edge = x.shape[3] + right - 1
                count = sum(r <= bottom_edge for r in rows) * sum(c <= right_edge for c in cols)
            else:
                count = len(inside)
            out[:, :, i, j] = values.sum(-1) / count
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(
    "kernel, stride, dilation, pad, ceil_mode, count_include_pad",
    [
        ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, True),
        ((2, 3), (2, 3), (1, 1), (0, 1, 1, 0), True, True),
        ((3, 2), (1, 2), (2, 1), (2, 1, 0, 1), False, False),
        ((2, 2), (3, 2), (1, 2), (0, 0, 0, 0), True, False),
    ],
)
def test_pool2d(kind, kernel, stride, dilation, pad, ceil_mode, count_include_pad):
    D = te.placeholder(DATA, name="D")
    d = random(DATA)
    out = topi.nn.pool2d(
        D, kernel, stride, dilation, pad, kind, ceil_mode, "NCHW", count_include_pad
    )
    assert (out.name, out.op.tag) == (
        ("pool_max", "pool_max") if kind == "max" else ("pool_avg", "elemwise")
    )
    expected = _pool2d(d, kernel, stride, dilation, pad, kind, ceil_mode, count_include_pad)
    check(out, [D], [d], expected, atol=1e-6)


def test_pool2d_in_nhwc_pools_the_h_and_w_dimensions():
    D = te.placeholder((2, 9, 11, 3), name="D")
    d = random((2, 9, 11, 3))
    out = topi.nn.pool2d(D, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max", layout="NHWC")
    expected = _pool2d(
        d.transpose(0, 3, 1, 2), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max", False, True
    )
    check(out, [D], [d], expected.transpose(0, 2, 3, 1))


def test_pool_arguments_are_checked():
    D = te.placeholder(DATA, name="D")
    with pytest.raises(AlgorithmError, match="pool_type 'sum' is not 'max' or 'avg'"):
        topi.nn.pool2d(D, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "sum")
    with pytest.raises(AlgorithmError, match="must have a 'H' dimension, not split"):
        topi.nn.pool2d(D, (2, 2), (1, 1), (1, 1), (0, 0, 0, 0), "max", layout="NCHW4h")


@pytest.mark.parametrize("kind, ref", [("avg", np.mean), ("max", np.max)])
def test_global_pool(kind, ref):
    D = te.placeholder(DATA, name="D")
    d = random(DATA)
    out = topi.nn.global_pool(D, kind)
    assert out.name == f"adaptive_pool_{kind}"
    check(out, [D], [d], ref(d, axis=(2, 3), keepdims=True), atol=1e-6)


@pytest.mark.parametrize("kind, ref", [("avg", np.mean), ("max", np.max)])
def test_adaptive_pool_cuts_each_dimension_into_windows(kind, ref):
    D = te.placeholder(DATA, name="D")
    d = random(DATA)
    out = topi.nn.adaptive_pool(D, (4, 3), kind)
    expected = np.zeros((2, 3, 4, 3), "float32")
    for i in range(4):
        for j in range(3):
            rows = slice(i * 9 // 4, -(-(i + 1) * 9 // 4))
            cols = slice(j * 11 // 3, -(-(j + 1) * 11 // 3))
            expected[:, :, i, j] = ref(d[:, :, rows, cols], axis=(2, 3))
    check(out, [D], [d], expected, atol=1e-6)
