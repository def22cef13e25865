"""TOPI's operators refuse arguments they cannot honour with an error that names the operator
and what is wrong, before anything is built."""

from __future__ import annotations

import pytest

from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

A = te.placeholder((3, 5, 7), name="A")
D = te.placeholder((2, 3, 9, 11), name="D")
INDICES = te.placeholder((2,), dtype="int32", name="I")

CASES = [
    (lambda: topi.broadcast_to(A, (5, 7)), "broadcast_to: 'A' has 3 dimensions, more than"),
    (lambda: topi.sum(topi.sum(A)), "cannot reduce the 0-d tensor 'A_red'"),
    (lambda: topi.expand_dims(A, 5), "expand_dims: axis 5 is out of range for 3 dimensions"),
    (lambda: topi.transpose(A, (0, 0, 1)), r"axes \[0, 0, 1\] are not a permutation"),
    (lambda: topi.stack([A, A], 5), "stack: axis 5 is out of range"),
    (lambda: topi.take(A, INDICES, axis=1, mode="nearest"), "mode 'nearest' is not one of"),
    (
        lambda: topi.take(A, INDICES, axis=0, batch_dims=1),
        r"batch_dims 1 must lie in \[0, axis=0\]",
    ),
    (lambda: topi.gather(A, 1, INDICES), "gather: data has 3 dimensions, indices 1"),
    (lambda: topi.layout_transform(A, "NCW", "NCH4w"), "splits 'W', which it lacks"),
    (lambda: topi.nn.pad(A, (1, 1)), r"pad: 'A' has 3 dimensions; \[1, 1\] before"),
    (lambda: topi.nn.dilate(A, (2, 2)), r"dilate: 3 dimensions but strides \[2, 2\]"),
    (lambda: topi.nn.matmul(A, A), "matmul: both operands must be 2-D"),
    (lambda: topi.nn.batch_matmul(D, D), "batch_matmul: both operands must be 3-D"),
    (lambda: topi.nn.conv2d_nchw(D, D, 1, "FULL"), "padding 'FULL': give sizes, 'VALID' or"),
    (lambda: topi.nn.conv2d_nchw(D, D, (1, 1, 1), 0), r"stride \(1, 1, 1\): give one int or two"),
    (
        lambda: topi.nn.conv2d_transpose_nchw(D, D, (2, 2), 0, "float32", (2, 0)),
        r"output_padding \(2, 0\) must be below the strides",
    ),
    (
        lambda: topi.nn.pool2d(D, (2, 2), (1,), (1, 1), (0, 0, 0, 0), "max"),
        "pooling over 2 dimensions: give 2 kernel sizes, strides and dilations and 4 paddings",
    ),
    (lambda: topi.nn.adaptive_pool(D, (2, 2), "min"), "pool_type 'min' is not 'max' or 'avg'"),
    (lambda: topi.nn.lrn(D, 2), "lrn: the data must be 4-D and of a float dtype, `size` odd"),
    (
        lambda: topi.image.resize2d(D, (0, 0, 0, 0), (4, 4), coordinate_transformation_mode="x"),
        "unknown coordinate_transformation_mode 'x'",
    ),
    (
        lambda: topi.image.resize2d(
            D, (0, 0, 0, 0), (4, 4), method="nearest_neighbor", rounding_method="up"
        ),
        "unknown rounding_method 'up'",
    ),
]


@pytest.mark.parametrize("make, message", CASES)
def test_bad_arguments_are_refused_by_name(make, message):
    with pytest.raises(AlgorithmError, match=message):
        make()
