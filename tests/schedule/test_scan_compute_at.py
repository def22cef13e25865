"""A scan computed at a loop of its reader (`poly.scan_placement`): every stage of the scan runs
inside the reader's loop, over the elements read there and every step; checked against the
plain definition and the reference evaluator on random data at sizes the tiles do not divide,
symbolic sizes, on the CPU and in the GPU simulator; and the schedules it cannot take refused."""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.errors import PlacementError

from .test_online import _attention, _numpy_attention

RNG = np.random.default_rng(7)
D = 8


def _data(n, magnitude=1.0):
    return [(RNG.standard_normal((n, D)) * magnitude).astype(np.float32) for _ in range(3)]


def _stage(s, name):
    return next(stage for stage in s.stages if stage.name == name)


def _fused_attention(n, factor, tile, causal=False):
    """Attention made one pass by online, the whole scan computed per tile of query rows."""
    inputs, chain, out = _attention(n, causal=causal)
    s = sl.create_schedule(out)
    states = s.online(list(chain), factor=factor)
    for reader in chain[1:]:
        s[reader].compute_inline()
    i, _ = s[out].op.axis
    io, ii = s[out].split(i, factor=tile)
    s[states[0]].compute_at(s[out], io)
    return s, inputs, out, io, ii


@pytest.mark.parametrize("n, factor, tile", [(37, 8, 4), (16, 4, 16), (5, 8, 3), (1, 2, 2)])
def test_attention_computed_per_tile_of_rows(n, factor, tile):
    s, inputs, out, _, _ = _fused_attention(n, factor, tile)
    lowered = str(sl.lower(s, [*inputs, out]))
    # One nest per tile: the states are boxes of the tile's rows, for the steps still read
    # (the maximum of the step before is read after the new one is stored).
    assert f"allocate M.run: float32[2, {min(tile, n)}]" in lowered
    assert f"allocate O.run: float32[1, {min(tile, n)}, {D}]" in lowered
    if n > factor:  # more than one step: a loop over them
        assert "O.run[0, i_" in lowered and "M.run[(j.step - 1) % 2" in lowered
    arrays = _data(n)
    result = np.full((n, D), np.nan, np.float32)
    sl.build(s, [*inputs, out])(*arrays, result)
    np.testing.assert_allclose(result, _numpy_attention(*arrays), rtol=2e-5, atol=2e-6)
    rewritten = sl.reference([out], dict(zip(inputs, arrays)))[0]
    np.testing.assert_allclose(result, rewritten, rtol=2e-5, atol=2e-6)


def test_causal_attention_skips_the_blocks_above_the_diagonal():
    n = 45
    s, inputs, out, _, _ = _fused_attention(n, factor=8, tile=8, causal=True)
    lowered = str(sl.lower(s, [*inputs, out]))
    # A block's keys stop at the diagonal, from isl: none above it.
    assert re.search(r"range\(0, min\(7, 8 \* i\.outer - 8 \* j\.step \+ i_\d+ \+ 8\)", lowered)
    arrays = _data(n, magnitude=20.0)  # scores in the hundreds: exp overflows without the max
    result = np.full((n, D), np.nan, np.float32)
    sl.build(s, [*inputs, out])(*arrays, result)
    # A float32 score of a few hundred is off by 1e-5 of itself: so is exp(score - max).
    np.testing.assert_allclose(result, _numpy_attention(*arrays, causal=True), rtol=1e-3, atol=1e-5)


def test_a_symbolic_length():
    n = sl.var("n")
    s, inputs, out, _, _ = _fused_attention(n, factor=8, tile=5)
    kernel = sl.build(s, [*inputs, out])
    for size in (1, 9, 23):
        arrays = _data(size)
        result = np.full((size, D), np.nan, np.float32)
        kernel(*arrays, result)
        np.testing.assert_allclose(result, _numpy_attention(*arrays), rtol=2e-5, atol=2e-6)


def test_a_scan_read_at_every_step_by_its_reader():
    """A cumulative sum computed per tile of columns, read at every row by its reader."""
    m, n = 13, 21
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="update")
    cum = sl.scan(init, update, state, name="cum")
    y = sl.compute((m, n), lambda t, i: cum[t, i] * 2.0, name="Y")
    s = sl.create_schedule(y)
    t, i = s[y].op.axis
    io, ii = s[y].split(i, factor=4)
    s[y].reorder(io, t, ii)
    s[cum].compute_at(s[y], io)
    lowered = str(sl.lower(s, [x, y]))
    assert "allocate cum: float32[13, 4]" in lowered
    data = RNG.standard_normal((m, n)).astype(np.float32)
    result = np.full((m, n), np.nan, np.float32)
    sl.build(s, [x, y])(data, result)
    np.testing.assert_allclose(result, 2 * np.cumsum(data, axis=0), rtol=1e-5, atol=1e-5)


def test_the_states_per_thread_in_the_gpu_simulator():
    n = 37
    inputs, chain, out = _attention(n, causal=True)
    s = sl.create_schedule(out)
    states = s.online(list(chain), factor=8)
    for reader in chain[1:]:
        s[reader].compute_inline()
    i, _ = s[out].op.axis
    io, ii = s[out].split(i, factor=16)
    s[out].bind(io, sl.thread_axis("blockIdx.x"))
    s[out].bind(ii, sl.thread_axis("threadIdx.x"))
    s[states[0]].compute_at(s[out], ii)  # scope local: a copy per thread
    update = _stage(s, "M.online.M_update")
    s[_stage(s, "M.online.block_max")].compute_at(update, update.op.axis[0])
    scores = _stage(s, "S")
    outer, inner = s[scores].split(s[scores].fuse(*scores.op.axis), factor=64)
    s[scores].bind(outer, sl.thread_axis("blockIdx.x"))
    s[scores].bind(inner, sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [*inputs, out], target="cuda")
    assert "allocate O.run: float32[1, 1, 8] in local" in str(kernel.lowered)
    arrays = _data(n)
    result = np.full((n, D), np.nan, np.float32)
    kernel.simulate(*arrays, result)
    np.testing.assert_allclose(result, _numpy_attention(*arrays, causal=True), rtol=2e-5, atol=2e-6)


def test_it_prints_undoes_and_replays():
    s, inputs, out, io, _ = _fused_attention(19, factor=8, tile=4)
    lowered = str(sl.lower(s, [*inputs, out]))
    assert "s[M_run].compute_at(s[Out], Out_i_outer)" in str(s)
    assert str(sl.lower(s.copy(), [*inputs, out])) == lowered
    s.undo()
    assert "allocate M.run: float32[4, 19]" in str(sl.lower(s, [*inputs, out]))


def test_what_it_cannot_take_is_refused_by_name():
    s, inputs, out, io, _ = _fused_attention(19, factor=8, tile=4)
    update = _stage(s, "M.online.O_update")
    with pytest.raises(PlacementError, match="computes the steps of the scan 'M.run'"):
        s[_stage(s, "M.run")].compute_at(update, update.op.axis[0])
    step = update.op.axis[0]
    s[update].split(step, factor=2)
    with pytest.raises(PlacementError, match="its step loop 'j.step' must stay its outermost"):
        sl.lower(s, [*inputs, out])


def test_a_region_that_grows_with_the_steps_is_refused():
    m, n = 6, 20
    x = sl.placeholder((m, n + 8), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    update = sl.compute(
        (m, n),
        lambda t, i: (
            state[t - 1, i] + sl.if_then_else(i + 1 < n, state[t - 1, sl.min(i + 1, n - 1)], 0.0)
        ),
        name="update",
    )
    ripple = sl.scan(init, update, state, name="ripple")
    y = sl.compute((n,), lambda i: ripple[m - 1, i], name="Y")
    s = sl.create_schedule(y)
    io, _ = s[y].split(s[y].op.axis[0], factor=4)
    s[ripple].compute_at(s[y], io)
    with pytest.raises(PlacementError, match="reaches other elements at every step"):
        sl.lower(s, [x, y])


def test_two_steps_back_keeps_two_rows():
    """An update reading the two steps before: two init rows, two rows kept, the older one
    read before the new step overwrites it."""
    m, n = 11, 10
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((2, n), lambda r, i: x[r, i], name="init")
    update = sl.compute(
        (m, n), lambda t, i: state[t - 1, i] + 0.5 * state[t - 2, i] + x[t, i], name="update"
    )
    rec = sl.scan(init, update, state, name="rec")
    y = sl.compute((n,), lambda i: rec[m - 1, i] + 1.0, name="Y")
    s = sl.create_schedule(y)
    io, _ = s[y].split(s[y].op.axis[0], factor=3)
    s[rec].compute_at(s[y], io)
    assert "allocate rec: float32[2, 3]" in str(sl.lower(s, [x, y]))
    data = RNG.standard_normal((m, n)).astype(np.float32)
    want = data.astype(np.float64).copy()
    for t in range(2, m):
        want[t] = want[t - 1] + 0.5 * want[t - 2] + data[t]
    result = np.full(n, np.nan, np.float32)
    sl.build(s, [x, y])(data, result)
    np.testing.assert_allclose(result, want[-1] + 1.0, rtol=1e-5)


def test_a_stage_read_in_the_steps_is_computed_at_any_body_stage_step_loop():
    """The body stages share one loop over the steps: a tile of V, read by the weighted sum
    only, may be computed at the maximum's update's step loop (beside K's tile, so that one
    pipeline brings both); a tile nothing in the steps reads may not."""
    n = 37
    s, inputs, out, _, _ = _fused_attention(n, factor=8, tile=4)
    update = _stage(s, "M.online.M_update")
    for name in ("S", "M.online.block_max"):
        s[_stage(s, name)].compute_at(update, update.op.axis[0])
    v_tile = s.cache_read(inputs[2], "local", [_stage(s, "M.online.O_block")])
    s[v_tile].compute_at(update, update.op.axis[0])
    arrays = _data(n)
    result = np.full((n, D), np.nan, np.float32)
    sl.build(s, [*inputs, out])(*arrays, result)
    np.testing.assert_allclose(result, _numpy_attention(*arrays), rtol=2e-5, atol=2e-6)
    # the schedule's text replays it on a copy, whose axes are other objects with the same names
    assert "s[V_local].compute_at(s[M_online_M_update], s[M_online_M_update].op.axis[0])" in str(s)
    s, inputs, out, _, _ = _fused_attention(n, factor=8, tile=4)
    update = _stage(s, "M.online.M_update")
    v_tile = s.cache_read(inputs[2], "local", [_stage(s, "M.online.O_block")])
    with pytest.raises(PlacementError, match="or, at a scan's loop over its steps, a stage"):
        s[v_tile].compute_at(update, update.op.axis[1])  # a loop of the update's own
