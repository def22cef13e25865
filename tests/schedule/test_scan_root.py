"""A scan at the root with several body stages left at the root: they share the scan's loop
over the steps (TE's scan body), reductions and stages computed at their step loops included,
and match the reference at odd and symbolic sizes."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from tests.cuda.ptxas import assemble


def _recurrent():
    """A small recurrent cell: h[t] = tanh(W x[t] + U h[t - 1]) * g[t], with g from x alone."""
    m, n, d = sl.var("m"), sl.var("n"), 5
    x = sl.placeholder((m, d), name="X")
    w = sl.placeholder((n, d), name="W")
    u = sl.placeholder((n, n), name="U")
    state = sl.placeholder((m, n), name="h")
    init = sl.compute((1, n), lambda _, j: sl.const(0.25), name="init")
    kx = sl.reduce_axis((0, d), name="kx")
    kh = sl.reduce_axis((0, n), name="kh")
    wx = sl.compute((m, n), lambda t, j: sl.sum(w[j, kx] * x[t, kx], axis=kx), name="wx")
    uh = sl.compute((m, n), lambda t, j: sl.sum(u[j, kh] * state[t - 1, kh], axis=kh), name="uh")
    gate = sl.compute((m, n), lambda t, j: sl.sigmoid(x[t, j % d]), name="gate")
    pre = sl.compute((m, n), lambda t, j: wx[t, j] + uh[t, j], name="pre")
    update = sl.compute((m, n), lambda t, j: sl.tanh(pre[t, j]) * gate[t, j], name="update")
    result = sl.scan(init, update, state, inputs=[x])
    return (x, w, u), (init, wx, uh, gate, pre, update), result


def _expected(xv, wv, uv):
    h = np.empty((xv.shape[0], wv.shape[0]), "float64")
    h[0] = 0.25
    for t in range(1, len(xv)):
        gate = 1 / (1 + np.exp(-xv[t, np.arange(wv.shape[0]) % xv.shape[1]]))
        h[t] = np.tanh(wv @ xv[t] + uv @ h[t - 1]) * gate
    return h


@pytest.mark.parametrize("arrangement", ["all_at_root", "inlined", "computed_at_update"])
def test_body_stages_at_the_root_step_together(arrangement):
    (x, w, u), (init, wx, uh, gate, pre, update), result = _recurrent()
    s = sl.create_schedule(result)
    if arrangement == "inlined":
        s[pre].compute_inline()
        s[gate].compute_inline()
    if arrangement == "computed_at_update":
        jo, _ = s[update].split(update.op.axis[1], factor=4)
        s[pre].compute_at(s[update], jo)
        s[uh].compute_at(s[update], update.op.axis[0])
    text = str(sl.lower(s, [x, w, u, result]))
    assert text.count("for t in range(1, m)") == 1, text
    kernel = sl.build(s, [x, w, u, result])
    rng = np.random.default_rng(5)
    for steps, width in ((1, 3), (6, 7), (9, 11)):
        xv = rng.uniform(-1, 1, (steps, 5)).astype("float32")
        wv = rng.uniform(-1, 1, (width, 5)).astype("float32")
        uv = rng.uniform(-0.5, 0.5, (width, width)).astype("float32")
        out = np.full((steps, width), np.nan, "float32")
        kernel(xv, wv, uv, out)
        np.testing.assert_allclose(out, _expected(xv, wv, uv), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            sl.reference(result, {x: xv, w: wv, u: uv}), out, rtol=1e-5, atol=1e-6
        )


def test_on_the_gpu_the_host_steps_every_body_stage_in_the_simulator():
    (x, w, u), (init, wx, uh, gate, pre, update), result = _recurrent()
    s = sl.create_schedule(result)
    s[pre].compute_inline()
    s[gate].compute_inline()
    for t in (init, wx, uh, update):
        _, j = t.op.axis
        jo, ji = s[t].split(j, factor=4)
        s[t].bind(jo, sl.thread_axis("blockIdx.x"))
        s[t].bind(ji, sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [x, w, u, result], target="cuda")
    rng = np.random.default_rng(6)
    xv = rng.uniform(-1, 1, (7, 5)).astype("float32")
    wv = rng.uniform(-1, 1, (9, 5)).astype("float32")
    uv = rng.uniform(-0.5, 0.5, (9, 9)).astype("float32")
    out = np.full((7, 9), np.nan, "float32")
    kernel.simulate(xv, wv, uv, out)
    np.testing.assert_allclose(out, _expected(xv, wv, uv), rtol=1e-5, atol=1e-6)
    assemble(kernel.ptx)


def test_a_body_stage_read_at_an_earlier_step_keeps_its_steps():
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="h")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    b = sl.compute((m, n), lambda t, i: state[t - 1, i] * 0.5 + x[t, i], name="b")
    update = sl.compute(
        (m, n),
        lambda t, i: b[t, i] + sl.if_then_else(t > 1, b[sl.max(t - 1, 1), i], sl.const(0.0)),
        name="update",
    )
    result = sl.scan(init, update, state)
    s = sl.create_schedule(result)
    text = str(sl.lower(s, [x, result]))
    assert text.index("allocate b") < text.index("for t in range(1, m)"), text
    xv = np.random.default_rng(7).uniform(-1, 1, (8, 5)).astype("float32")
    want = np.empty((8, 5))
    bs = np.zeros((8, 5))
    want[0] = xv[0]
    for t in range(1, 8):
        bs[t] = want[t - 1] * 0.5 + xv[t]
        want[t] = bs[t] + (bs[t - 1] if t > 1 else 0.0)
    out = np.full((8, 5), np.nan, "float32")
    sl.build(s, [x, result])(xv, out)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sl.reference(result, {x: xv}), want, rtol=1e-5, atol=1e-6)
