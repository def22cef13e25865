"""The demo's timing (`demo.interleaved_rounds`, `demo.annotate`): steps and the yardstick are
timed in interleaved rounds, so that a noisy stretch of the machine slows a round of every
step and cannot reorder them; a step slower than the one before says so in the table."""

from __future__ import annotations

import contextlib
import itertools

import numpy as np
import pytest

from schedlang.demo import Row, annotate, interleaved_rounds
from schedlang.demo_numpy import YARDSTICK, faster, yardstick


class Machine:
    """A clock that each call advances by its own cost, plus whatever a noisy stretch of the
    machine adds to the calls made during it."""

    def __init__(self, noisy_calls: set[int], delay: float) -> None:
        self.now = 0.0
        self.count = itertools.count()
        self.noisy_calls, self.delay = noisy_calls, delay

    def clock(self) -> float:
        return self.now

    def work(self, seconds: float):
        def run():
            self.now += seconds
            if next(self.count) in self.noisy_calls:
                self.now += self.delay

        return run


def test_a_noisy_stretch_cannot_reorder_the_steps():
    costs = {"slow": 0.010, "faster": 0.004, "fastest": 0.001, "yardstick": 0.002}
    rng = np.random.default_rng(0)
    for trial in range(20):  # noise in a run of consecutive calls, somewhere
        start = int(rng.integers(0, 40))
        machine = Machine(set(range(start, start + 4)), delay=0.05)
        calls = {name: machine.work(cost) for name, cost in costs.items()}
        samples = interleaved_rounds(calls, budget=0.1, rounds=(9, 9), clock=machine.clock)
        medians = {name: np.median(times) for name, times in samples.items()}
        assert sorted(medians, key=medians.get) == sorted(costs, key=costs.get), trial
        assert all(len(times) == 9 for times in samples.values())


def test_the_rounds_fill_the_budget_within_their_bounds():
    machine = Machine(set(), 0.0)
    calls = {"a": machine.work(0.01), "b": machine.work(0.01)}
    samples = interleaved_rounds(calls, budget=0.2, rounds=(3, 50), clock=machine.clock)
    assert len(samples["a"]) == 10  # 0.2 s of 0.02 s rounds
    few = interleaved_rounds(calls, budget=0.001, rounds=(3, 50), clock=machine.clock)
    assert len(few["a"]) == 3


def test_a_slower_step_and_a_parallel_step_without_gain_say_so():
    rows = [
        Row("naive", 1.0, "yes", 0.02),
        Row("+ tiles", 0.5, "yes", 0.02),
        Row("+ cache", 0.6, "yes", 0.02),  # slower than the step before, beyond the noise
        Row("+ noise", 0.62, "yes", 0.10),  # slower, within the noise
        Row("+ parallel", 0.61, "yes", 0.02),  # no faster
        Row("numpy (yardstick)", 0.9, "-", 0.02),
    ]
    notes = [row.note for row in annotate(rows, cores=1)]
    assert notes[:3] == ["", "", "slower than the step before, on this machine"]
    assert notes[3] == ""
    assert notes[4] == "no gain here: 1 core(s) usable for its threads"
    assert notes[5] == ""
    faster = annotate(rows[:2] + [Row("+ parallel", 0.2, "yes", 0.02)], cores=8)
    assert faster[-1].note == ""


def test_a_setup_is_entered_outside_the_timed_call():
    machine = Machine(set(), 0.0)
    entered = []

    @contextlib.contextmanager
    def slow_setup():
        machine.now += 1.0  # a costly limit, which the timing must leave out
        entered.append(True)
        yield
        machine.now += 1.0

    calls = {"limited": machine.work(0.01), "plain": machine.work(0.02)}
    samples = interleaved_rounds(
        calls, budget=0.1, rounds=(4, 4), clock=machine.clock, setups={"limited": slow_setup}
    )
    np.testing.assert_allclose(samples["limited"], [0.01] * 4)
    np.testing.assert_allclose(samples["plain"], [0.02] * 4)
    assert len(entered) == 5  # the warm-up and each round


def test_the_yardstick_limits_the_blas_and_reports_the_faster_setting():
    from threadpoolctl import threadpool_info

    stick = yardstick()
    default, *rest = stick.settings
    assert stick.settings[default].threads is None
    if not rest:
        pytest.skip(f"the BLAS runs one thread by default here: {stick.blas}")
    (one,) = rest
    with stick.setups[one]():
        assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {1}
    samples = {default: [0.026, 0.027, 0.025], one: [0.004, 0.0039, 0.0041]}
    best, note, line = faster(stick, samples)
    assert best == one
    assert note.startswith("1 BLAS thread; ") and "BLAS threads: 26.000 ms" in note
    assert line.startswith("numpy: np.matmul through ")
    assert line.endswith(
        "(threadpoolctl) in the same rounds; the table shows the faster, 1 BLAS thread"
    )
    assert all(key.startswith(YARDSTICK) for key in stick.settings)
