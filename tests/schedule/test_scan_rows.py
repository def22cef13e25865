"""A scan's init gives its first rows into the state: more of them than the state has steps
would be written past the end of its buffer. Refused when the scan is written (constant
extents), when it is lowered (rows that never fit), or at the call (rows that fit at some
sizes), by the compiled kernel on the CPU and GPU paths, the interpreter and the reference
alike; legal sizes match the reference."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import schedlang as sl
from schedlang.errors import AlgorithmError, LaunchError
from schedlang.loopir.interpret import run

RNG = np.random.default_rng(31)
TOO_MANY = (
    r"scan 'scan': the init 'init' gives 2 rows, but the state 'state' has 1 row along its "
    r"steps \(m=1\), so the init's rows would be written past its end; call it with sizes "
    r"where m >= 2, or give fewer init rows"
)

# Two init rows, m steps: an intermediate read by `after`, so its buffer is a temporary.
ORDER_TWO = """
import numpy as np, schedlang as sl
m, n = sl.var("m"), sl.var("n")
x = sl.placeholder((2, n), name="X")
state = sl.placeholder((m, n), name="state")
init = sl.compute((2, n), lambda t, i: x[t, i] * 0.5, name="init")
update = sl.compute((m, n), lambda t, i: state[t - 1, i] + state[t - 2, i], name="update")
result = sl.scan(init, update, state)
after = sl.compute((m, n), lambda t, i: result[t, i] * 2, name="after")
"""


def _order_two():
    names: dict = {}
    exec(ORDER_TWO, names)
    return names


def _floats(*shape):
    return RNG.uniform(0.5, 2, shape).astype("float32")


def _bind_columns(s, stage):
    outer, inner = s[stage].split(stage.op.axis[1], factor=32)
    s[stage].bind(outer, sl.thread_axis("blockIdx.x"))
    s[stage].bind(inner, sl.thread_axis("threadIdx.x"))


def test_legal_sizes_match_the_reference_and_too_few_steps_are_refused():
    g = _order_two()
    x, after, m = g["x"], g["after"], g["m"]
    s = sl.create_schedule(after)
    s[after].parallel(after.op.axis[1])
    kernel = sl.build(s, [x, after])
    data = _floats(2, 37)
    for steps in (2, 3, 11, 2, 11):  # again, once the call's fast path is warm
        out = np.full((steps, 37), np.nan, "float32")
        kernel(data, out)
        want = sl.reference(after, {x: data}, sizes={m: steps})
        np.testing.assert_allclose(out, want, rtol=1e-5)
    out = np.full((1, 37), np.nan, "float32")
    with pytest.raises(LaunchError, match="kernel 'main': " + TOO_MANY):
        kernel(data, out)
    assert np.isnan(out).all()
    with pytest.raises(LaunchError, match=TOO_MANY):
        kernel(data, m=1)  # outputs made by the call: the sizes checked before anything runs
    with pytest.raises(LaunchError, match=TOO_MANY):
        run(kernel.lowered, [data, out])
    with pytest.raises(AlgorithmError, match=TOO_MANY):
        sl.reference(after, {x: data}, sizes={m: 1})


def test_too_few_steps_for_an_intermediate_scan_raise_instead_of_aborting():
    """The init's rows once landed past the temporary's end, on the heap: the process
    aborted (``double free or corruption``)."""
    script = ORDER_TWO + textwrap.dedent(
        """
        kernel = sl.build(sl.create_schedule(after), [x, after])
        data = np.random.default_rng(0).uniform(0.5, 2, (2, 5000)).astype("float32")
        for _ in range(20):
            try:
                kernel(data, np.empty((1, 5000), "float32"))
            except sl.LaunchError as error:
                message = str(error)
        print(message)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "the init 'init' gives 2 rows, but the state 'state' has 1 row" in done.stdout


def test_the_gpu_path_checks_the_rows_before_it_runs():
    g = _order_two()
    x, init, update, after, m = g["x"], g["init"], g["update"], g["after"], g["m"]
    s = sl.create_schedule(after)
    for stage in (init, update, after):
        _bind_columns(s, stage)
    kernel = sl.build(s, [x, after], target="cuda")
    data = _floats(2, 45)
    out = np.full((5, 45), np.nan, "float32")
    kernel.simulate(data, out)
    np.testing.assert_allclose(out, sl.reference(after, {x: data}, sizes={m: 5}), rtol=1e-5)
    with pytest.raises(LaunchError, match=TOO_MANY):
        kernel.simulate(data, np.empty((1, 45), "float32"))


def test_the_printed_function_shows_what_a_call_checks():
    g = _order_two()
    text = str(sl.lower(sl.create_schedule(g["after"]), [g["x"], g["after"]]))
    assert "# a call checks 2 <= m: the init of scan 'scan' gives 2 rows" in text
    cumulative = _cumulative(1)  # one row always fits (every size is at least 1)
    lowered = sl.lower(sl.create_schedule(cumulative[1]), list(cumulative))
    assert not lowered.scan_rows and "a call checks" not in str(lowered)


def _cumulative(rows, steps=None):
    n = sl.var("n")
    steps = sl.var("m") if steps is None else steps
    x = sl.placeholder((steps, n), name="X")
    state = sl.placeholder((steps, n), name="state")
    init = sl.compute((rows, n), lambda t, i: x[t, i], name="init")
    update = sl.compute((steps, n), lambda t, i: state[t - 1, i] + x[t, i], name="update")
    return x, sl.scan(init, update, state)


def test_rows_known_not_to_fit_when_written():
    with pytest.raises(AlgorithmError) as error:
        _cumulative(3, 2)
    assert str(error.value).startswith(
        "scan 'scan': the init 'init' gives 3 rows, but the state 'state' has 2 rows along its "
        "steps, so the init's rows would be written past its end; give the state at least 3 "
        "rows, or the init fewer"
    )


def test_rows_that_never_fit_are_refused_when_lowered():
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m + 1, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((m + 1, n), lambda t, i: x[t, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i], name="update")
    result = sl.scan(init, update, state)
    with pytest.raises(AlgorithmError, match=r"gives m \+ 1 rows, but the state 'state' has m"):
        sl.lower(sl.create_schedule(result), [x, result])
