"""`Bench.measure` on the CPU: a kernel is checked before it is timed, and one that cannot
beat the run's best time (measured on any device of the run) is not timed on."""

from __future__ import annotations

import math

import pytest

from schedlang.runtime import kernel as kernel_module
from schedlang.tune.bench import Bench, bench_data
from schedlang.tune.building import build_one
from tests.tune import templates


@pytest.fixture(scope="module")
def bench_and_built():
    task = templates.matmul(13, 21, 19)
    built = build_one(task, 0, "cpu")
    assert built.status == "built", built.error
    return Bench(task, "cpu", bench_data(task), repeat=5), built


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


def test_a_kernel_that_may_win_is_timed_in_full(bench_and_built, timings):
    bench, built = bench_and_built
    status, seconds, error = bench.measure(built, math.inf)
    assert (status, error) == ("ok", "") and seconds > 0
    assert timings == [1, 3, 5]


def test_a_kernel_far_slower_than_the_runs_best_is_timed_once(bench_and_built, timings):
    bench, built = bench_and_built
    status, seconds, _ = bench.measure(built, best=1e-12)
    assert status == "ok" and seconds > 4e-12
    assert timings == [1]
