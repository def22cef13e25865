"""Measuring on a Dask cluster: a local cluster of two CPU worker processes measures the
configurations that this process compiles, each worker checking every kernel against its own
reference, and the log is the same kind of log."""

from __future__ import annotations

import math
import time

import pytest

import schedlang as sl
from tests.tune import templates

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as connected:
        yield connected
    cluster.close()


def test_a_local_cluster_measures_every_configuration(client, tmp_path):
    from schedlang.tune import cluster as measuring

    task = templates.matmul(11, 19, 7)
    during = []

    def heard(trial):
        if trial.ok:
            during.append(sum(client.run(lambda: len(measuring._benches)).values()))

    log = sl.tune.run(
        task, target="cpu", search="grid", cluster=client, workers=2, repeat=2,
        log=tmp_path / "log.jsonl", progress=False, callback=heard,
    )  # fmt: skip
    assert max(during) >= 1  # a worker held a bench while the run measured
    assert sorted(t.number for t in log) == list(range(len(task.space)))
    assert log.counts() == {"ok": 4, "illegal": 4, "wrong": 0, "failed": 0}
    assert all("CPU" in t.device for t in log)
    s, args = sl.tune.load(tmp_path / "log.jsonl").best().schedule()
    assert sl.build(s, args) is not None
    assert len(client.scheduler_info()["workers"]) == 2  # the client's cluster is left running
    held = client.run(lambda: len(measuring._benches))
    assert set(held.values()) == {0}  # each worker let its bench for the run go


def test_each_worker_holds_at_most_two_kernels_beyond_its_threads(client, tmp_path, monkeypatch):
    """schedlang hands the kernels out: every worker measures some, and none holds more than
    its one thread's kernel and the next two (counted as each is handed over: a tiny kernel
    may be measured before the scheduler could be asked)."""
    from schedlang.tune import cluster as measuring

    held = []
    send = measuring.OnCluster._send

    def counted(self, handed):
        held.append(max(len(kernels) for kernels in self._held.values()))
        send(self, handed)

    monkeypatch.setattr(measuring.OnCluster, "_send", counted)
    with distributed.get_task_stream(client) as stream:
        log = sl.tune.run(
            templates.matmul(23, 17, 9), target="cpu", search="grid", cluster=client,
            workers=2, repeat=2, log=tmp_path / "log.jsonl", progress=False,
        )  # fmt: skip
    assert log.counts()["ok"] == 4
    # (a kernel moved to an idle worker just as its first one started it is measured twice)
    measured_by = [t["worker"] for t in stream.data if "_measure_remote" in t["key"]]
    assert len(measured_by) >= 4 and len(set(measured_by)) == 2
    assert 1 <= max(held) <= 3


def test_kernels_waiting_on_a_busy_worker_move_to_an_idle_one(monkeypatch):
    """One worker takes a second per kernel, the other a hundredth: once none are left to hand
    out, the kernels queued behind the slow one's first move to the fast one, and each is
    answered once."""
    from collections import Counter

    from schedlang.tune import cluster as measuring
    from schedlang.tune.building import Built

    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as here:
        slow = sorted(here.scheduler_info()["workers"])[0]

        def measure(*_):
            worker = distributed.get_worker().address
            time.sleep(1.0 if worker == slow else 0.01)
            return ("ok", 1.0, "", 0.0, worker)

        monkeypatch.setattr(measuring, "_measure_remote", measure)
        on = measuring.OnCluster(here, templates.matmul(3, 5, 4), "cpu", 0, None, 1)
        try:
            on.start()
            built = [Built(k, "built", "", "", 0.0) for k in range(10)]
            answers = [f.result(timeout=30) for f in [on.submit(b, math.inf) for b in built]]
        finally:
            on.close()
    by_worker = Counter(answer[4] for answer in answers)
    assert by_worker[slow] == 1 and sum(by_worker.values()) == 10


def test_a_better_time_is_told_to_the_other_workers_ahead_of_their_kernels(monkeypatch):
    """Each new best goes to every worker but the one that measured it: here one worker
    measures ever better times, the other one slow kernels that never beat them."""
    from schedlang.tune import cluster as measuring
    from schedlang.tune.building import Built

    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as here:
        fast, slow = sorted(here.scheduler_info()["workers"])

        def measure(*_):
            worker = distributed.get_worker()
            if worker.address == slow:
                time.sleep(0.3)
                return ("ok", 100.0, "", 0.0, worker.address)
            time.sleep(0.02)
            worker.measured = getattr(worker, "measured", 0) + 1
            return ("ok", 2.0**-worker.measured, "", 0.0, worker.address)

        def better(key, seconds):  # runs on a copy: what it hears is kept on the worker
            worker = distributed.get_worker()
            worker.told = [*getattr(worker, "told", []), seconds]

        monkeypatch.setattr(measuring, "_measure_remote", measure)
        monkeypatch.setattr(measuring, "_better_remote", better)
        on = measuring.OnCluster(here, templates.matmul(3, 5, 4), "cpu", 0, None, 1)
        by_address = {w.address: w for w in cluster.workers.values()}

        def heard():
            return {address: sorted(getattr(w, "told", [])) for address, w in by_address.items()}

        try:
            on.start()
            futures = [on.submit(Built(k, "built", "", "", 0.0), math.inf) for k in range(8)]
            answers = [f.result(timeout=30) for f in futures]
            bests = sorted(a[1] for a in answers if a[4] == fast)  # each better than the last
            deadline = time.monotonic() + 10  # the last ones are told after their answers
            while heard()[slow] != bests and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            on.close()
    assert len(bests) >= 3 and heard() == {fast: [], slow: bests}


def test_a_bench_takes_a_better_time_it_is_told_of():
    from schedlang.tune import cluster as measuring

    class Held:
        best = math.inf  # as a bench that has measured nothing yet

    measuring._benches["run"] = held = Held()
    try:
        told = []
        for seconds in (3.0, 1.5, 2.0):  # the last is worse than what it knows
            measuring._better_remote("run", seconds)
            told.append(held.best)
        measuring._better_remote("another run", 0.5)  # a run this worker holds no bench of
    finally:
        measuring._benches.pop("run")
    assert told == [3.0, 1.5, 1.5]


def test_data_goes_straight_only_to_workers_of_this_machine():
    from schedlang.tune.cluster import _on_this_machine

    assert _on_this_machine("tcp://127.0.0.1:8786") and _on_this_machine("tls://[::1]:8786")
    assert not _on_this_machine("tcp://203.0.113.5:8786")  # a documentation address


def test_the_workers_find_wrong_kernels_too(client, tmp_path):
    with pytest.warns(sl.SchedlangWarning, match="output C is off by"):
        log = sl.tune.run(
            templates.faulty(9), target="cpu", search="grid", cluster=client, workers=2,
            repeat=1, log=tmp_path / "log.jsonl", progress=False,
        )  # fmt: skip
    statuses = {t.knobs["fault"]: t.status for t in log}
    assert statuses == {"none": "ok", "wrong": "wrong", "raise": "failed", "die": "failed"}


def test_a_cluster_without_dask_says_how_to_get_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name == "distributed":
            raise ImportError("no module named distributed")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(sl.tune.TuneError, match=r"pip install 'schedlang\[distributed\]'"):
        sl.tune.run(templates.matmul(5, 5, 5), target="cpu", cluster="local", progress=False)


def test_a_worker_stops_timing_a_kernel_that_cannot_win(tmp_path):
    """The inner sums done again for every output are some thirty times slower: measured after
    the root schedule on the same worker, that kernel is checked and timed once (two runs),
    not ten times."""
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as one:
        log = sl.tune.run(
            templates.recompute(20000), target="cpu", search="grid", cluster=one, workers=1,
            repeat=5, log=tmp_path / "log.jsonl", progress=False,
        )  # fmt: skip
    trials = {t.knobs["inner_sums"]: t for t in log}
    assert trials["root"].ok and trials["at"].ok
    assert trials["at"].seconds > 4 * trials["root"].seconds
    assert trials["at"].measure_s < 5 * trials["at"].seconds  # in full: ten runs
