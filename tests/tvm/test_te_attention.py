"""Attention written in TE as its definition, fused by `online` into one pass over blocks of
keys and built with TE's calls, against numpy on random data at a length the block does not
divide."""

from __future__ import annotations

import numpy as np

import schedlang.tvm as tvm
from schedlang.tvm import te


def test_te_attention_in_one_online_pass():
    n, d = 29, 8
    q, k, v = (te.placeholder((n, d), name=name) for name in "QKV")
    kd = te.reduce_axis((0, d), name="kd")
    s_ = te.compute((n, n), lambda i, j: te.sum(q[i, kd] * k[j, kd] * 0.35, axis=kd), name="S")
    j = te.reduce_axis((0, n), name="j")
    m = te.compute((n,), lambda i: te.max(s_[i, j], axis=j), name="M")
    p = te.compute((n, n), lambda i, j: te.exp(s_[i, j] - m[i]), name="P")
    jz = te.reduce_axis((0, n), name="jz")
    z = te.compute((n,), lambda i: te.sum(p[i, jz], axis=jz), name="Z")
    jo = te.reduce_axis((0, n), name="jo")
    o = te.compute((n, d), lambda i, e: te.sum(p[i, jo] * v[jo, e], axis=jo), name="O")
    out = te.compute((n, d), lambda i, e: o[i, e] / z[i], name="Out")
    s = te.create_schedule(out.op)
    s.online([m, z, o], factor=8)
    f = tvm.build(s, [q, k, v, out], target="llvm")
    dev = tvm.cpu(0)
    rng = np.random.default_rng(3)
    data = [rng.standard_normal((n, d)).astype("float32") for _ in range(3)]
    arrays = [tvm.nd.array(x, dev) for x in data]
    result = tvm.nd.array(np.full((n, d), np.nan, "float32"), dev)
    f(*arrays, result)
    scores = data[0] @ data[1].T * 0.35
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    want = (e @ data[2]) / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(result.numpy(), want, rtol=2e-5, atol=2e-6)
