"""`sl.tune.Compilers`: compile processes kept from one tuning run to the next, each learning
a task the first time it builds one of its configurations."""

from __future__ import annotations

import pytest

import schedlang as sl
from schedlang.tune.worker import _build
from tests.tune import templates


def _run(task, tmp_path, workers, **options):
    return sl.tune.run(task, target="cpu", search="grid", workers=workers, repeat=2,
                       progress=False, log=tmp_path / "log.jsonl", **options)  # fmt: skip


def test_kept_processes_serve_one_run_after_another(tmp_path):
    with sl.tune.Compilers(2) as compilers:
        first = _run(templates.matmul(13, 21, 19), tmp_path, compilers)
        started = [p.pid for p in compilers._processes]
        second = _run(templates.matmul(9, 17, 11), tmp_path, compilers)
        assert [p.pid for p in compilers._processes] == started
        assert all(p.poll() is None for p in compilers._processes)
    for log in (first, second):
        assert log.counts() == {"ok": 4, "illegal": 4, "wrong": 0, "failed": 0}
    assert first.trials[0].key != second.trials[0].key
    assert all(p.poll() is not None for p in compilers._processes)  # closed with the block


def test_a_run_stopped_by_an_error_leaves_the_processes_to_the_next(tmp_path):
    def stop(trial):
        raise KeyboardInterrupt

    with sl.tune.Compilers(1) as compilers:
        with pytest.raises(KeyboardInterrupt):
            _run(templates.matmul(13, 21, 19), tmp_path, compilers, callback=stop)
        log = _run(templates.matmul(11, 21, 19), tmp_path, compilers)
    assert log.counts() == {"ok": 4, "illegal": 4, "wrong": 0, "failed": 0}


@pytest.mark.parametrize("workers", [0, -2, "many", True, 2.5])
def test_workers_are_a_count_or_compilers(workers, tmp_path):
    with pytest.raises(sl.tune.TuneError, match="workers=.*sl.tune.Compilers"):
        _run(templates.matmul(5, 5, 5), tmp_path, workers)


def test_a_task_the_process_cannot_read_fails_each_of_its_builds():
    built = _build(ModuleNotFoundError("No module named 'notebook_cell'"), 3, "cpu")
    assert (built.number, built.status) == (3, "failed")
    assert "could not read the task" in built.error and "notebook_cell" in built.error


@pytest.mark.parametrize("count", [0, -1, 1.5])
def test_compilers_are_at_least_one(count):
    with pytest.raises(sl.tune.TuneError, match="at least 1"):
        sl.tune.Compilers(count)


def test_ready_waits_until_every_process_has_loaded_llvm():
    with sl.tune.Compilers(2) as compilers:
        assert not compilers.ready(timeout=0)  # importing schedlang and LLVM takes longer
        assert compilers.ready(timeout=120)
        assert len(compilers._processes) == 2
        assert all(p.poll() is None for p in compilers._processes)
        assert compilers.ready(timeout=0)  # asked again: at once
