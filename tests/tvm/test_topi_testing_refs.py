"""The numpy references of `tvm.topi.testing` against the convolution written out as loops."""

import numpy as np

from schedlang.tvm.topi.testing import conv2d_nhwc_python


def _conv_nhwc_loops(data, weights, stride, pad):
    padded = np.pad(data, ((0, 0), (pad[0], pad[0]), (pad[1], pad[1]), (0, 0)))
    rows, cols, _, filters = weights.shape
    out_h = (padded.shape[1] - rows) // stride[0] + 1
    out_w = (padded.shape[2] - cols) // stride[1] + 1
    out = np.zeros((data.shape[0], out_h, out_w, filters))
    for y in range(out_h):
        for x in range(out_w):
            window = padded[:, y * stride[0] : y * stride[0] + rows, x * stride[1] :][:, :, :cols]
            out[:, y, x, :] = np.einsum("nhwc,hwcf->nf", window, weights)
    return out


def test_conv2d_nhwc_python_takes_nhwc_data_and_hwio_weights():
    rng = np.random.default_rng(7)
    data = rng.uniform(-1, 1, (2, 7, 9, 3)).astype(np.float32)
    weights = rng.uniform(-1, 1, (3, 2, 3, 5)).astype(np.float32)
    got = conv2d_nhwc_python(data, weights, (2, 1), (1, 0))
    assert got.shape == (2, 4, 8, 5) and got.dtype == np.float32
    np.testing.assert_allclose(
        got, _conv_nhwc_loops(data, weights, (2, 1), (1, 0)), rtol=1e-5, atol=1e-5
    )
