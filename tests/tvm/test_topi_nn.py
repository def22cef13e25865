"""TOPI's `nn` operators on schedlang (softmax, dense, batch_matmul, convolutions, pad, lrn,
layer_norm) against numpy at small odd shapes, under TE's default schedule and under one that
inlines the stages TOPI tags as injective, as TOPI's schedules do."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang.tvm as tvm
from schedlang.errors import AlgorithmError
from schedlang.tvm import te, topi

from .topi_check import check, random


def _inlined(out):
    """TE's default schedule with every injective stage before `out` inlined."""
    s = te.create_schedule(out.op)
    pending = list(out.op.input_tensors)
    while pending:
        t = pending.pop()
        if topi.tag.is_injective(getattr(t.op, "tag", "")):
            s[t].compute_inline()
        pending += t.op.input_tensors
    return s


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_softmax_and_log_softmax(axis):
    A = te.placeholder((3, 5, 7), name="A")
    a = random((3, 5, 7), low=-3, high=3)
    out = topi.nn.softmax(A, axis)
    assert out.name == "T_softmax_norm" and out.op.tag == "softmax_output"
    assert int(out.op.attrs["axis"].value) == axis % 3
    assert [t.name for t in out.op.input_tensors] == ["T_softmax_exp", "T_softmax_expsum"]
    check(out, [A], [a], _softmax(a, axis), atol=1e-6)
    log = topi.nn.log_softmax(A, axis)
    assert log.op.tag == "log_softmax_output"
    check(log, [A], [a], np.log(_softmax(a, axis)), atol=1e-5)


def _dense_inputs():
    X = te.placeholder((5, 9), name="X")
    W = te.placeholder((7, 9), name="W")
    bias = te.placeholder((7,), name="bias")
    return (X, W, bias), (random((5, 9)), random((7, 9), seed=1), random((7,), seed=2))


def test_dense_with_and_without_bias():
    (X, W, bias), (x, w, b) = _dense_inputs()
    plain = topi.nn.dense(X, W)
    assert (plain.name, plain.op.tag) == ("T_matmul_NT", "dense")
    check(plain, [X, W], [x, w], x @ w.T)
    out = topi.nn.dense(X, W, bias)
    assert out.op.tag == "broadcast" and out.op.input_tensors[0].name == "T_matmul_NT"
    check(out, [X, W, bias], [x, w, b], x @ w.T + b)


def test_dense_pack_reads_weights_packed_in_blocks():
    (X, _, _), (x, w, _) = _dense_inputs()
    w8 = np.concatenate([w, random((1, 9), seed=3)])
    packed = w8.reshape(2, 4, 9).transpose(0, 2, 1)
    P = te.placeholder(packed.shape, name="P")
    out = topi.nn.dense_pack(X, P)
    assert (out.name, out.op.tag) == ("T_dense_pack", "dense_pack")
    check(out, [X, P], [x, packed], x @ w8.T)


@pytest.mark.parametrize("ta, tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_with_each_operand_transposed_or_not(ta, tb):
    a, b = random((5, 9)), random((9, 7), seed=1)
    a_in, b_in = (a.T.copy() if ta else a), (b.T.copy() if tb else b)
    A = te.placeholder(a_in.shape, name="A")
    B = te.placeholder(b_in.shape, name="B")
    out = topi.nn.matmul(A, B, transpose_a=ta, transpose_b=tb)
    assert out.name == "T_matmul_" + ("T" if ta else "N") + ("T" if tb else "N")
    check(out, [A, B], [a_in, b_in], a @ b)


def test_batch_matmul_shares_a_batch_of_one():
    X = te.placeholder((3, 5, 9), name="X")
    Y = te.placeholder((1, 7, 9), name="Y")
    x, y = random((3, 5, 9)), random((1, 7, 9), seed=1)
    out = topi.nn.batch_matmul(X, Y)
    assert (out.name, out.op.tag) == ("T_batch_matmul_NT", "batch_matmul")
    check(out, [X, Y], [x, y], x @ y.transpose(0, 2, 1))
    Z = te.placeholder((3, 9, 7), name="Z")
    z = random((3, 9, 7), seed=2)
    check(topi.nn.batch_matmul(X, Z, transpose_b=False), [X, Z], [x, z], x @ z)
    with pytest.raises(AlgorithmError, match="batches 3 and 2 do not match"):
        topi.nn.batch_matmul(X, te.placeholder((2, 7, 9), name="V"))


def _conv(data, weight, stride, pad, dilation):
    """Cross-correlation of NCHW data with OIHW weights, padding (top, left, bottom, right)."""
    top, left, bottom, right = pad
    padded = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right))).astype("float64")
    rows, cols = weight.shape[2:]
    out_h = (padded.shape[2] - (rows - 1) * dilation - 1) // stride + 1
    out_w = (padded.shape[3] - (cols - 1) * dilation - 1) // stride + 1
    out = np.zeros((data.shape[0], weight.shape[0], out_h, out_w))
    for y in range(rows):
        for x in range(cols):
            window = padded[
                :,
                :,
                y * dilation : y * dilation + stride * (out_h - 1) + 1 : stride,
                x * dilation : x * dilation + stride * (out_w - 1) + 1 : stride,
            ]
            out += np.einsum("nchw,fc->nfhw", window, weight[:, :, y, x])
    return out


DATA = (2, 3, 9, 11)


@pytest.mark.parametrize(
    "stride, padding, dilation, pad", [(1, 1, 1, (1, 1, 1, 1)), (2, (1, 0, 2, 1), 2, (1, 0, 2, 1))]
)
def test_conv2d_nchw(stride, padding, dilation, pad):
    D, F = te.placeholder(DATA, name="D"), te.placeholder((4, 3, 3, 3), name="F")
    d, f = random(DATA), random((4, 3, 3, 3), seed=1)
    out = topi.nn.conv2d_nchw(D, F, stride, padding, dilation)
    assert (out.name, out.op.tag) == ("conv2d_nchw", "conv2d_nchw")
    assert out.op.input_tensors[0].name == "pad_temp"
    expected = _conv(d, f, stride, pad, dilation)
    check(out, [D, F], [d, f], expected, atol=1e-4)
    check(out, [D, F], [d, f], expected, schedule=_inlined(out), atol=1e-4)


def test_conv2d_hwcn_is_conv2d_nchw_in_other_layouts():
    """HWCN data and HWIO filters (TE's TEDD tutorial's), stride 2 and SAME padding, with
    TOPI's generic schedule."""
    D, F = te.placeholder((9, 11, 3, 2), name="D"), te.placeholder((3, 3, 3, 4), name="F")
    d, f = random((9, 11, 3, 2)), random((3, 3, 3, 4), seed=1)
    out = topi.nn.conv2d_hwcn(D, F, 2, "SAME", 1)
    assert (out.name, out.op.tag) == ("Conv2dOutput", "conv2d_hwcn")
    assert out.op.input_tensors[0].name == "PaddedInput"
    nchw = _conv(d.transpose(3, 2, 0, 1), f.transpose(3, 2, 0, 1), 2, (1, 1, 1, 1), 1)
    with tvm.target.Target("llvm"):
        schedule = topi.generic.schedule_conv2d_hwcn([out])
    check(out, [D, F], [d, f], nchw.transpose(2, 3, 1, 0), schedule=schedule, atol=1e-4)


def test_depthwise_conv2d_nchw_convolves_each_channel_with_its_own_filters():
    D, W = te.placeholder(DATA, name="D"), te.placeholder((3, 2, 3, 3), name="W")
    d, w = random(DATA), random((3, 2, 3, 3), seed=1)
    out = topi.nn.depthwise_conv2d_nchw(D, W, (2, 1), "SAME", 1)
    assert (out.name, out.op.tag) == ("DepthwiseConv2d", "depthwise_conv2d_nchw")
    expected = np.concatenate(
        [
            _conv(d[:, c : c + 1], w[c : c + 1].transpose(1, 0, 2, 3), 1, (1, 1, 1, 1), 1)
            for c in range(3)
        ],
        axis=1,
    )[:, :, ::2, :]
    check(out, [D, W], [d, w], expected, atol=1e-4)


def test_conv2d_transpose_nchw_is_the_adjoint_of_a_strided_convolution():
    D, W = te.placeholder(DATA, name="D"), te.placeholder((3, 4, 3, 3), name="W")
    d, w = random(DATA), random((3, 4, 3, 3), seed=1)
    out = topi.nn.conv2d_transpose_nchw(D, W, (2, 2), 1, "float32", (1, 0))
    assert out.op.tag == "conv2d_transpose_nchw"
    full = np.zeros((2, 4, 8 * 2 + 3 + 1, 10 * 2 + 3))
    for y in range(9):
        for x in range(11):
            contribution = np.einsum("nc,cohw->nohw", d[:, :, y, x], w)
            full[:, :, 2 * y : 2 * y + 3, 2 * x : 2 * x + 3] += contribution
    expected = full[:, :, 1 : 1 + 8 * 2 + 1 + 1, 1 : 1 + 10 * 2 + 1]
    check(out, [D, W], [d, w], expected, atol=1e-4)
    check(out, [D, W], [d, w], expected, schedule=_inlined(out), atol=1e-4)


def test_pad_with_a_value():
    A = te.placeholder((3, 5, 7), name="A")
    a = random((3, 5, 7))
    out = topi.nn.pad(A, (1, 0, 2), (0, 2, 1), 0.5)
    assert (out.name, out.op.tag) == ("PadInput", "injective,pad")
    check(out, [A], [a], np.pad(a, ((1, 0), (0, 2), (2, 1)), constant_values=0.5))


@pytest.mark.parametrize("axis", [1, 3])
def test_lrn_normalizes_across_neighbouring_channels(axis):
    L = te.placeholder((2, 7, 3, 5), name="L")
    x = random((2, 7, 3, 5))
    size, alpha, beta, bias = 3, 0.001, 0.75, 2.0
    out = topi.nn.lrn(L, size, axis, alpha, beta, bias)
    assert (out.name, out.op.tag) == ("T_divide", "broadcast")
    squares = np.moveaxis(np.pad(np.moveaxis(x, axis, 0) ** 2, ((1, 1),) + ((0, 0),) * 3), 0, axis)
    window = sum(np.take(squares, range(k, k + x.shape[axis]), axis) for k in range(size))
    check(out, [L], [x], x / (bias + alpha * window / size) ** beta, rtol=1e-5)


@pytest.mark.parametrize("axis", [(2, 3), (-1,), (0, 1, 2, 3)])
def test_layer_norm(axis):
    L = te.placeholder((2, 5, 3, 7), name="L")
    x = random((2, 5, 3, 7))
    dims = tuple(a % 4 for a in axis)
    shape = tuple(x.shape[d] for d in dims)
    G, B = te.placeholder(shape, name="gamma"), te.placeholder(shape, name="beta")
    g, b = random(shape, seed=1), random(shape, seed=2)
    out = topi.nn.layer_norm(L, G, B, axis)
    assert (out.name, out.op.tag) == ("T_layer_norm", "injective")
    mean, var = x.mean(dims, keepdims=True), x.var(dims, keepdims=True)
    expand = [slice(None) if d in dims else None for d in range(4)]
    expected = (x - mean) / np.sqrt(var + 1e-5) * g[tuple(expand)] + b[tuple(expand)]
    check(out, [L, G, B], [x, g, b], expected, atol=1e-4)
