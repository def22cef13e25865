"""Scans (recurrences over a leading time axis): written in place by their init and update
stages, scheduled as stages are, their steps held to the algorithm's order by isl, checked
against numpy on random data with NaN-poisoned outputs, on the CPU, in the GPU simulator (the
steps launched by the host) and on a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.nvptx.plan import HostLoop
from schedlang.errors import AlgorithmError, LoweringError, ScheduleError

RNG = np.random.default_rng(29)


def _cumsum():
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="update")
    return x, init, update, state, sl.scan(init, update, state, inputs=[x])


def _floats(*shape):
    return RNG.uniform(0.5, 2, shape).astype("float32")


def _poisoned(*shape):
    return np.full(shape, np.nan, "float32")


def _bind_columns(s, stage, factor=32):
    outer, inner = s[stage].split(stage.op.axis[1], factor=factor)
    s[stage].bind(outer, sl.thread_axis("blockIdx.x"))
    s[stage].bind(inner, sl.thread_axis("threadIdx.x"))


def test_a_cumulative_sum_steps_through_time_in_place():
    x, init, update, state, result = _cumsum()
    s = sl.create_schedule(result)
    text = str(sl.lower(s, [x, result]))
    assert "for t in range(1, m):" in text and "scan[t, i_1] = scan[t - 1, i_1]" in text
    kernel = sl.build(s, [x, result])
    for steps, width in ((1, 3), (10, 7), (33, 1)):
        data, out = _floats(steps, width), _poisoned(steps, width)
        kernel(data, out)
        np.testing.assert_allclose(out, np.cumsum(data, axis=0), rtol=1e-5)
        np.testing.assert_allclose(sl.reference(result, {x: data}), out, rtol=1e-5)


def test_a_body_stage_computed_inside_the_update():
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    doubled = sl.compute((m, n), lambda t, i: state[t - 1, i] * 2, name="doubled")
    update = sl.compute((m, n), lambda t, i: doubled[t, i] + x[t, i], name="update")
    result = sl.scan(init, update, state)
    s = sl.create_schedule(result)
    outer, inner = s[update].split(update.op.axis[1], factor=8)
    s[doubled].compute_at(s[update], outer)
    kernel = sl.build(s, [x, result])
    data, out = _floats(9, 21), _poisoned(9, 21)
    kernel(data, out)
    want = np.empty_like(data)
    want[0] = data[0]
    for t in range(1, 9):
        want[t] = want[t - 1] * 2 + data[t]
    np.testing.assert_allclose(out, want, rtol=1e-5)
    np.testing.assert_allclose(sl.reference(result, {x: data}), want, rtol=1e-5)
    left = sl.create_schedule(result)  # at the root, the body stage steps in the scan's loop
    text = str(sl.lower(left, [x, result]))
    assert text.count("for t in range(1, m):") == 1, text
    out = _poisoned(9, 21)
    sl.build(left, [x, result])(data, out)
    np.testing.assert_allclose(out, want, rtol=1e-5)
    apart = sl.create_schedule(result)  # a split step loop runs apart, all its steps first
    apart[doubled].split(doubled.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match="keep the step loop outermost and plain"):
        sl.lower(apart, [x, result])


def _through_a_body_stage(depth=1):
    """state -> `depth` body stages -> update: each step reads the one before through them."""
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    body = [sl.compute((m, n), lambda t, i: state[t - 1, i] * 0.5, name="doubled")]
    for k in range(1, depth):
        body.append(_plus_one(body[-1], f"body{k}"))
    update = sl.compute((m, n), lambda t, i: body[-1][t, i] + x[t, i], name="update")
    return x, body, update, sl.scan(init, update, state)


def _plus_one(before, name):
    return sl.compute(before.shape, lambda t, i: before[t, i] + 1, name=name)


@pytest.mark.parametrize("depth", [1, 2])
def test_body_stages_at_the_step_loop_with_concurrent_columns(depth):
    x, body, update, result = _through_a_body_stage(depth)
    s = sl.create_schedule(result)
    t, i = update.op.axis
    for stage in body:
        s[stage].compute_at(s[update], t)
        s[stage].parallel(stage.op.axis[1])
    s[update].parallel(i)
    kernel = sl.build(s, [x, result])
    for steps, width in ((1, 3), (23, 7), (40, 33)):
        data, out = _floats(steps, width), _poisoned(steps, width)
        kernel(data, out)
        np.testing.assert_allclose(out, sl.reference(result, {x: data}), rtol=1e-5)


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize(
    "kind, target",
    [
        ("parallel", "cpu"),
        ("vectorize", "cpu"),
        ("blockIdx.x", "cuda"),
        ("threadIdx.x", "cuda"),
    ],
)
def test_steps_through_body_stages_do_not_run_at_the_same_time(kind, target, depth):
    """Without its body stages the update reads the step before itself and the step loop is
    refused for that; through them it is the same dependence, one stage removed."""
    x, body, update, result = _through_a_body_stage(depth)
    s = sl.create_schedule(result)
    t = update.op.axis[0]
    for stage in body:
        s[stage].compute_at(s[update], t)
    if kind == "parallel":
        s[update].parallel(t)
    elif kind == "vectorize":
        s[update].vectorize(t)
    else:
        s[update].bind(t, sl.thread_axis(kind))
    call = {"vectorize": r"vectorize\(t\)", "parallel": r"parallel\(t\)"}.get(
        kind, rf"bind\(t, {kind}\)"
    )
    with pytest.raises(ScheduleError) as error:
        sl.build(s, [x, result], target=target)
    assert error.match(
        rf"In schedule for 'update': {call} at test_scan.py:\d+: update\[t=1, i=0\] writes a "
        r"value that doubled\[t=2, i=0\] reads, but loop 't' runs its iterations at the same "
        rf"time \({kind.replace('vectorize', 'vectorized')}\); loop 't' runs the steps of the "
        r"scan 'scan', and each step reads an earlier one \(through 'doubled'\), so the steps "
        r"run one after another: keep 't' serial"
    )


def test_a_body_stage_computed_outside_the_step_loop_is_refused():
    """Computed at the columns, outside the steps, it computed every step before the steps
    it reads (the kernel read NaN)."""
    x, body, update, result = _through_a_body_stage()
    s = sl.create_schedule(result)
    t, i = update.op.axis
    s[update].reorder(i, t)
    s[body[0]].compute_at(s[update], i)
    with pytest.raises(ScheduleError) as error:
        sl.build(s, [x, result])
    assert error.match(
        r"In schedule for 'doubled': schedule at test_scan.py:\d+: doubled\[t=2, i=0\] needs "
        r"the value update\[t=1, i=0\] produces, but the schedule runs it first; 'doubled' runs "
        r"steps of the scan 'scan' but is computed at loop 'i' of 'update', outside the loop "
        r"over the steps, so it computes steps before the steps they read: compute it at the "
        r"loop over the steps, or inside it"
    )


def test_two_steps_of_init_and_a_recurrence_of_order_two():
    """Fibonacci-like rows: S[t] = S[t - 1] + S[t - 2], the first two rows given."""
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((2, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((2, n), lambda t, i: x[t, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i] + state[t - 2, i], name="update")
    result = sl.scan(init, update, state)
    s = sl.create_schedule(result)
    s[update].parallel(s[update].op.axis[1])  # the columns are independent
    data, out = _floats(2, 5), _poisoned(8, 5)
    sl.build(s, [x, result])(data, out)
    want = np.concatenate([data, np.empty((6, 5), "float32")])
    for t in range(2, 8):
        want[t] = want[t - 1] + want[t - 2]
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_a_recurrent_layer_with_a_reduction_in_its_body():
    """h[t] = tanh(h[t - 1] @ W + X[t]): the product is a body stage, one row per step."""
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    w = sl.placeholder((n, n), name="W")
    state = sl.placeholder((m, n), name="h")
    k = sl.reduce_axis((0, n), name="k")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    product = sl.compute((m, n), lambda t, i: sl.sum(state[t - 1, k] * w[k, i], axis=k), name="mv")
    update = sl.compute((m, n), lambda t, i: sl.tanh(product[t, i] + x[t, i]), name="update")
    result = sl.scan(init, update, state)
    s = sl.create_schedule(result)
    s[product].compute_at(s[update], update.op.axis[0])
    data = RNG.uniform(-1, 1, (7, 6)).astype("float32")
    weights = RNG.uniform(-0.4, 0.4, (6, 6)).astype("float32")
    out = _poisoned(7, 6)
    sl.build(s, [x, w, result])(data, weights, out)
    want = data.copy()
    for t in range(1, 7):
        want[t] = np.tanh(want[t - 1] @ weights + data[t])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sl.reference(result, {x: data, w: weights}), want, atol=1e-6)


def test_two_states_stepped_together():
    m, n, width = sl.var("m"), sl.var("n"), sl.var("l")
    x = sl.placeholder((m, n), name="X")
    first = sl.placeholder((m, n), name="first")
    second = sl.placeholder((m, width), name="second")
    init1 = sl.compute((1, n), lambda _, i: x[0, i], name="init1")
    init2 = sl.compute((1, width), lambda _, i: sl.const(0.0), name="init2")
    update1 = sl.compute((m, n), lambda t, i: first[t - 1, i] + x[t, i], name="update1")
    update2 = sl.compute((m, width), lambda t, i: second[t - 1, i] + first[t - 1, 0], name="u2")
    a, b = sl.scan([init1, init2], [update1, update2], [first, second])
    assert (a.value_index, b.value_index) == (0, 1) and a.op.output(1) == b
    s = sl.create_schedule(a)
    data, out_a, out_b = _floats(6, 5), _poisoned(6, 5), _poisoned(6, 3)
    sl.build(s, [x, a, b])(data, out_a, out_b)
    sums = np.cumsum(data, axis=0)
    np.testing.assert_allclose(out_a, sums, rtol=1e-5)
    carried = np.concatenate([[0.0], np.cumsum(sums[:-1, 0])])
    np.testing.assert_allclose(out_b, np.repeat(carried[:, None], 3, axis=1), rtol=1e-5)
    want = sl.reference([a, b], {x: data}, sizes={width: 3})
    np.testing.assert_allclose(out_b, want[1], rtol=1e-5)


def test_the_steps_run_by_the_host_around_the_kernels_in_the_simulator():
    x, init, update, state, result = _cumsum()
    s = sl.create_schedule(result)
    _bind_columns(s, init)
    _bind_columns(s, update)
    kernel = sl.build(s, [x, result], target="cuda")
    plan = kernel._compiled.plan
    loops = [item for item in plan.program if isinstance(item, HostLoop)]
    assert len(plan.kernels) == 2 and len(loops) == 1 and loops[0].var.name == "t"
    data, out = _floats(11, 45), _poisoned(11, 45)
    kernel.simulate(data, out)
    np.testing.assert_allclose(out, np.cumsum(data, axis=0), rtol=1e-5)


def test_the_host_stepped_kernels_assemble():
    from tests.cuda.ptxas import assemble

    x, init, update, state, result = _cumsum()
    s = sl.create_schedule(result)
    _bind_columns(s, init)
    _bind_columns(s, update)
    report = assemble(sl.build(s, [x, result], target="cuda").ptx)
    assert report.registers > 0 and report.spill_bytes == 0


@pytest.mark.gpu
def test_a_cumulative_sum_on_the_gpu():
    x, init, update, state, result = _cumsum()
    s = sl.create_schedule(result)
    _bind_columns(s, init, 64)
    _bind_columns(s, update, 64)
    kernel = sl.build(s, [x, result], target="cuda")
    data, out = _floats(37, 1000), _poisoned(37, 1000)
    kernel(data, out)
    np.testing.assert_allclose(out, np.cumsum(data, axis=0), rtol=1e-5)


# -- what is refused, and how it is said ------------------------------------------------


def test_updates_reading_each_other_as_one_compute_with_two_outputs():
    """Two states whose updates read each other's earlier steps, written as one compute with
    two outputs: one loop steps both."""
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    h1, h2 = sl.placeholder((m, n), name="h1"), sl.placeholder((m, n), name="h2")
    i1 = sl.compute((1, n), lambda _, i: x[0, i], name="i1")
    i2 = sl.compute((1, n), lambda _, i: x[0, i] * 2, name="i2")
    u1, u2 = sl.compute((m, n), lambda t, i: (h2[t - 1, i] + x[t, i], h1[t - 1, i] * 0.5), name="u")
    a, b = sl.scan([i1, i2], [u1, u2], [h1, h2])
    data, out_a, out_b = _floats(7, 4), _poisoned(7, 4), _poisoned(7, 4)
    sl.build(sl.create_schedule(a), [x, a, b])(data, out_a, out_b)
    want_a, want_b = np.empty_like(data), np.empty_like(data)
    want_a[0], want_b[0] = data[0], data[0] * 2
    for t in range(1, 7):
        want_a[t], want_b[t] = want_b[t - 1] + data[t], want_a[t - 1] * 0.5
    np.testing.assert_allclose(out_a, want_a, rtol=1e-5)
    np.testing.assert_allclose(out_b, want_b, rtol=1e-5)


def _two_states(second):
    """Two states: the first's update reads the second's state, the second's update is
    `second(h1, h2, t, i)`."""
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    h1, h2 = sl.placeholder((m, n), name="h1"), sl.placeholder((m, n), name="h2")
    i1 = sl.compute((1, n), lambda _, i: x[0, i], name="i1")
    i2 = sl.compute((1, n), lambda _, i: x[0, i] * 2, name="i2")
    u1 = sl.compute((m, n), lambda t, i: h2[t - 1, i] + x[t, i], name="u1")
    u2 = sl.compute((m, n), lambda t, i: second(h1, h2, t, i), name="u2")
    return x, sl.scan([i1, i2], [u1, u2], [h1, h2])


def test_an_update_reading_a_later_listed_state_runs_after_it():
    x, (a, b) = _two_states(lambda h1, h2, t, i: h2[t - 1, i] * 0.5 + 1)
    data, out_a, out_b = _floats(6, 3), _poisoned(6, 3), _poisoned(6, 3)
    sl.build(sl.create_schedule(a), [x, a, b])(data, out_a, out_b)
    want_a, want_b = sl.reference([a, b], {x: data})
    np.testing.assert_allclose(out_a, want_a, rtol=1e-5)
    np.testing.assert_allclose(out_b, want_b, rtol=1e-5)


def test_reading_the_step_being_computed_is_an_error():
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="h")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t, i] + x[t, i], name="update")
    result = sl.scan(init, update, state)
    with pytest.raises(AlgorithmError, match=r"a step reads h\[1, 0\], which no earlier step"):
        sl.lower(sl.create_schedule(result), [x, result])


def test_updates_reading_each_others_states_step_together():
    x, (a, b) = _two_states(lambda h1, h2, t, i: h1[t - 1, i] * 0.5)
    data, out_a, out_b = _floats(7, 5), _poisoned(7, 5), _poisoned(7, 5)
    sl.build(sl.create_schedule(a), [x, a, b])(data, out_a, out_b)
    want_a, want_b = np.empty_like(data), np.empty_like(data)
    want_a[0], want_b[0] = data[0], data[0] * 2
    for t in range(1, 7):
        want_a[t] = want_b[t - 1] + data[t]
        want_b[t] = want_a[t - 1] * 0.5
    np.testing.assert_allclose(out_a, want_a, rtol=1e-5)
    np.testing.assert_allclose(out_b, want_b, rtol=1e-5)
    np.testing.assert_allclose(sl.reference(a, {x: data}), want_a, rtol=1e-5)


@pytest.mark.parametrize(
    "primitive, match",
    [
        ("compute_at", "is the update of the scan 'scan' and writes its rows in place"),
        ("set_scope", "is the update of the scan 'scan'"),
        ("cache_write", "is the update of the scan 'scan'"),
        ("scan_split", "'scan' is a scan: it has no loops of its own"),
    ],
)
def test_primitives_that_would_move_the_rows_are_refused(primitive, match):
    x, init, update, state, result = _cumsum()
    m, n = x.shape
    after = sl.compute((m, n), lambda t, i: result[t, i] * 2, name="after")
    s = sl.create_schedule(after)
    with pytest.raises(ScheduleError, match=match):
        if primitive == "compute_at":
            s[update].compute_at(s[after], after.op.axis[0])
        elif primitive == "set_scope":
            s[update].set_scope("shared")
        elif primitive == "cache_write":
            s.cache_write(update, "local")
        else:
            s[result].split(None, factor=2)


def test_a_scan_read_by_a_later_stage():
    x, init, update, state, result = _cumsum()
    m, n = x.shape
    after = sl.compute((m, n), lambda t, i: result[t, i] * 2, name="after")
    s = sl.create_schedule(after)
    data, out = _floats(5, 4), _poisoned(5, 4)
    sl.build(s, [x, after])(data, out)
    np.testing.assert_allclose(out, np.cumsum(data, axis=0) * 2, rtol=1e-5)


def test_the_parts_of_a_scan_are_not_arguments():
    x, init, update, state, result = _cumsum()
    s = sl.create_schedule(result)
    with pytest.raises(LoweringError, match="'init' is part of a scan"):
        sl.lower(s, [x, init, result])
    with pytest.raises(LoweringError, match="'update' is in args, but it is computed step by"):
        sl.lower(s, [x, update, result])


@pytest.mark.parametrize("case", ["shape", "state", "init_reads_state", "dtype", "input_init"])
def test_malformed_scans_are_refused_when_written(case):
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="update")
    with pytest.raises(AlgorithmError) as error:
        if case == "shape":
            sl.scan(init, sl.compute((m, n + 1), lambda t, i: x[t, 0], name="wide"), state)
        elif case == "state":
            sl.scan(init, update, update)
        elif case == "init_reads_state":
            sl.scan(sl.compute((1, n), lambda _, i: state[0, i], name="bad"), update, state)
        elif case == "input_init":
            sl.scan(sl.placeholder((1, n), name="first"), update, state)
        else:
            ints = sl.compute((1, n), lambda _, i: x[0, i].astype("int32"), name="ints")
            sl.scan(ints, update, state)
    expected = {
        "shape": "has shape (m, n + 1) and the state (m, n); they must be the same",
        "state": "the state must be a placeholder",
        "init_reads_state": "the init 'bad' reads a state",
        "dtype": "must have one dtype",
        "input_init": "the init 'first' must be a compute",
    }[case]
    assert expected in str(error.value)


def test_stages_reading_the_scans_inputs_run_the_steps_after_the_init_only():
    """As in TE's LSTM: a stage on the way from an input to the update reads ``X[t - 1]`` of
    an input with one step fewer; listed in `inputs`, it runs the steps after the init's row
    only, so the read stays in bounds (not listed, it runs every step and is refused)."""
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m - 1, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: sl.const(1.0, "float32"), name="init")
    shifted = sl.compute((m, n), lambda t, i: x[t - 1, i] * 3, name="shifted")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i] * 0.5 + shifted[t, i], name="update")
    result = sl.scan(init, update, state, inputs=[x])
    s = sl.create_schedule(result)
    s[shifted].compute_at(s[update], update.op.axis[0])
    kernel = sl.build(s, [x, result])
    for steps, width in ((2, 3), (9, 5)):
        data, out = _floats(steps - 1, width), _poisoned(steps, width)
        kernel(data, out)
        want = np.ones((steps, width), "float32")
        for t in range(1, steps):
            want[t] = want[t - 1] * 0.5 + data[t - 1] * 3
        np.testing.assert_allclose(out, want, rtol=1e-5)
        np.testing.assert_allclose(sl.reference(result, {x: data}), out, rtol=1e-5)
    unlisted = sl.scan(init, update, state)
    with pytest.raises(AlgorithmError, match=r"reads 'X\[t - 1, i\]' out of bounds"):
        sl.lower(sl.create_schedule(unlisted), [x, unlisted])
