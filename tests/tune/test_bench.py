"""`Bench.measure` on the CPU: a kernel is checked before it is timed, and one that cannot
beat the best time so far (this bench's own, or the run's over all its devices) is not timed
on."""

from __future__ import annotations

import math

import pytest

from schedlang.runtime import kernel as kernel_module
from schedlang.tune.bench import Bench, bench_data
from schedlang.tune.building import build_one
from tests.tune import templates


@pytest.fixture(scope="module")
def made():
    """The task (its inner sums at the root, or done again for every output: some thirty
    times slower) and its data."""
    task = templates.recompute(20000)
    built = {task.space.values(n)["inner_sums"]: build_one(task, n, "cpu") for n in range(2)}
    assert all(b.status == "built" for b in built.values()), built
    return task, bench_data(task), built


@pytest.fixture
def timings(monkeypatch):
    """The repeat of each timing the kernel is asked for."""
    asked = []
    original = kernel_module.Kernel.time

    def counted(self, *args, repeat, **options):
        asked.append(repeat)
        return original(self, *args, repeat=repeat, **options)

    monkeypatch.setattr(kernel_module.Kernel, "time", counted)
    return asked


def test_a_kernel_that_may_win_is_timed_in_full(made, timings):
    task, data, built = made
    status, seconds, error = Bench(task, "cpu", data, repeat=5).measure(built["root"], math.inf)
    assert (status, error) == ("ok", "") and seconds > 0
    assert timings == [1, 3, 5]


def test_a_kernel_far_slower_than_the_runs_best_is_timed_once(made, timings):
    task, data, built = made
    status, seconds, _ = Bench(task, "cpu", data, repeat=5).measure(built["root"], best=1e-12)
    assert status == "ok" and seconds > 4e-12
    assert timings == [1]


def test_the_bench_remembers_its_own_best(made, timings):
    """The run's best comes with the kernel when it is handed over, which may be before the
    kernels handed over earlier were measured: the bench's own best is as fresh as can be."""
    task, data, built = made
    bench = Bench(task, "cpu", data, repeat=5)
    fast = bench.measure(built["root"], math.inf)
    slow = bench.measure(built["at"], math.inf)
    assert fast[0] == slow[0] == "ok" and slow[1] > 4 * fast[1]
    assert timings == [1, 3, 5, 1]


def test_a_long_kernel_is_timed_once_even_before_any_best(made, timings):
    task, data, built = made
    bench = Bench(task, "cpu", data, repeat=5)
    bench.timing_budget = 1e-9  # as if the kernel ran for seconds
    status, seconds, _ = bench.measure(built["root"], math.inf)
    assert status == "ok" and seconds > 0
    assert timings == [1]
