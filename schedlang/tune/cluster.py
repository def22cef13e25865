"""Measuring on the workers of a Dask cluster, one per GPU (`OnCluster`).

Each worker process keeps one `Bench` per run (the reference computed once, here, and sent to
it; its inputs on its GPU) and measures one kernel at a time; its threads take turns
(`bench._measuring`). schedlang hands the kernels out itself: each worker holds as many as it
has threads plus two, so the next ones are waiting there when one finishes. Left to Dask, a
task whose data every worker holds waits on the scheduler until a worker asks for work, or is
placed on a worker that is still busy; with one kernel waiting per worker, the hand-over of
the next (worker, scheduler, this process and back) still took longer than a GEMM's
measurement now and then (70-350 ms, on two H100s while the first compiles ran), and the GPU
idled. Once none are left to hand out, kernels waiting on a busier worker move to an idle one
(`_even_out`), and each better time reaches the other workers ahead of their next kernels
(`_tell_best`).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from concurrent.futures import Future
from functools import partial

from .bench import Bench, bench_inputs, bench_reference
from .building import Built
from .knobs import TuneError
from .measuring import background, device_arch, device_name, start_cuda, timed


class OnCluster:
    """Measuring on a Dask cluster's workers (`cluster`: a Client, a scheduler address, or
    "local" for a cluster of this machine: one worker per GPU with dask-cuda, else per core)."""

    def __init__(self, cluster, task, kind: str, seed: int, sizes, repeat: int) -> None:
        import cloudpickle

        self.client = connect(cluster, kind)
        self._owned = not _is_client(cluster)
        self._data: Future | None = None
        self._lock = threading.Lock()
        self._waiting: deque = deque()  # (built, best, future): kernels no worker holds yet
        self._best = math.inf  # the best time any worker has measured
        self._closed = False
        try:
            names = self.client.run(_described, kind)
            if not names:
                raise TuneError("the Dask cluster has no workers to measure on")
            devices = sorted(set(names.values()))
            if len(devices) > 1:
                raise TuneError(
                    f"the Dask cluster's workers measure on {', '.join(d for d, _ in devices)}: "
                    "a tuning run's times compare one kind of device; give it a cluster of one"
                )
            [(self.device, self.arch)] = devices
            self.overlaps_compiles = True  # the workers measure elsewhere
            threads = {a: w["nthreads"] for a, w in self.client.scheduler_info()["workers"].items()}
            self._threads = {worker: threads.get(worker, 1) for worker in names}
            self._slots = {worker: self._threads[worker] + 2 for worker in names}
            # the kernels handed to each worker and not answered, in the order handed over
            self._held: dict[str, list[_Handed]] = {worker: [] for worker in names}
            self._order, self._turn = list(names), 0
            self._nearby = all(_on_this_machine(worker) for worker in names)
            self._blob = cloudpickle.dumps(task)
            self._settings = (kind, sizes, repeat)
            # the reference, computed here once (with all of this machine's cores: Dask gives
            # its workers' BLAS one thread) and sent to every worker, while the first
            # configurations compile; then each worker makes its bench before its first kernel
            self._start = lambda: self._prepare(task, seed, sizes, list(names))
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        """Begin computing the reference and sending it to the workers."""
        self._data = background(self._start)

    def _prepare(self, task, seed, sizes, workers) -> tuple:
        """The run's data on every worker, as the futures of its inputs and its reference:
        the inputs travel while the reference is computed."""
        inputs, bound = bench_inputs(task, seed, sizes)
        sending = background(lambda: self._broadcast(inputs))
        expected = self._broadcast(bench_reference(task, inputs, bound))
        data = (sending.result(), expected, expected.key)
        arguments = (self._blob, self._settings, *data)
        self._warming = [  # held: Dask drops a task whose future nobody holds
            self.client.submit(_warm_remote, *arguments, workers=[worker], pure=False)
            for worker in workers
        ]
        return data

    def _broadcast(self, data):
        """`data` on every worker. Left to itself, Dask hashes the data for its key and routes
        it through the scheduler: twice as long for a 64 MB reference as sending it straight
        to one worker of this machine and copying it from there to the others (a remote
        cluster's workers may not be reachable from here: its data goes the scheduler's way)."""
        direct = self._nearby or None
        return self.client.scatter([data], broadcast=True, hash=False, direct=direct)[0]

    def submit(self, built: Built, best: float) -> Future:
        """`built` measured on the first worker with room for it; `best`, the run's best time
        when it was handed over, travels with it (or a better one seen since)."""
        self._data.result()  # the first kernels wait for the run's data to be on the workers
        future: Future = Future()
        with self._lock:
            self._waiting.append((built, best, future))
        self._hand_out()
        return future

    def _hand_out(self) -> None:
        handed = []
        with self._lock:
            while self._waiting and not self._closed:
                # the least busy worker; among equals, each in turn (every GPU kept warm)
                self._turn = (self._turn + 1) % len(self._order)
                turned = self._order[self._turn :] + self._order[: self._turn]
                worker = min(turned, key=lambda w: len(self._held[w]) / self._slots[w])
                if len(self._held[worker]) >= self._slots[worker]:
                    break
                built, best, future = self._waiting.popleft()
                handed.append(self._hold(worker, built, best, future))
        self._send(handed)

    def _hold(self, worker: str, built: Built, best: float, future: Future) -> _Handed:
        """`built` counted as `worker`'s from now on (under the lock)."""
        handed = _Handed(worker, built, min(best, self._best), future)
        self._held[worker].append(handed)
        return handed

    def _send(self, handed: list[_Handed]) -> None:
        arguments = (self._blob, self._settings, *self._data.result())
        for one in handed:
            # pinned, but run elsewhere should the worker leave the cluster
            one.remote = self.client.submit(
                _measure_remote, *arguments, one.built, one.best,
                workers=[one.worker], allow_other_workers=True, pure=False,
            )  # fmt: skip
            # Dask runs done callbacks on a thread of its own: more are handed out from there
            one.remote.add_done_callback(partial(self._settle, one))

    def _settle(self, handed: _Handed, done) -> None:
        with self._lock:
            if handed.moved:
                return  # another worker measures it
            self._held[handed.worker].remove(handed)
        try:
            answer = done.result()
        except Exception as error:  # the worker died or the task was lost
            answer = ("failed", None, f"measuring on the cluster: {error}", 0.0, "?")
        better = False
        if answer[0] == "ok":
            with self._lock:
                better = answer[1] < self._best
                self._best = min(self._best, answer[1])
        handed.future.set_result(answer)
        self._hand_out()
        self._even_out(handed.worker)
        if better and not self._closed:
            self._tell_best(answer[1], handed.worker)

    def _tell_best(self, seconds: float, measured_on: str) -> None:
        """A better time told to the other workers, ahead of the kernels they hold: one
        handed over earlier carries the run's best of then, and a kernel within twice a
        best that is no longer the best is timed ten times instead of three or once."""
        from distributed import fire_and_forget

        key = self._data.result()[2]
        for worker in self._order:
            if worker != measured_on:
                told = self.client.submit(
                    _better_remote, key, seconds, workers=[worker], priority=1, pure=False
                )
                fire_and_forget(told)

    def _even_out(self, worker: str) -> None:
        """Kernels waiting on a busier worker moved to `worker`, once none are left here to
        hand out: at the end of a run, a worker that held two more than another finished
        that much later while the other's GPU idled (0.3 s of a 10 s run on two H100s).
        Dask's own work stealing never moves them: it counts their data (the inputs and the
        reference, which every worker holds) as if it had to travel."""
        moved, fresh = [], []
        with self._lock:
            while not self._waiting and not self._closed:
                victim = max(self._order, key=lambda w: len(self._open(w)))
                queue = self._open(victim)
                # a worker runs its kernels in the order they were handed over: its last one
                # waits unless it holds no more than its threads run at once
                if len(queue) - len(self._open(worker)) < 2 or len(queue) <= self._threads[victim]:
                    break
                last = queue[-1]
                if last.remote is None:
                    break  # being sent right now
                self._held[victim].remove(last)
                last.moved = True
                moved.append(last.remote)
                fresh.append(self._hold(worker, last.built, last.best, last.future))
        if moved:
            self.client.cancel(moved)
            self._send(fresh)

    def _open(self, worker: str) -> list[_Handed]:
        """`worker`'s kernels not measured yet: those answered wait only for their callback
        (under the lock)."""
        return [h for h in self._held[worker] if h.remote is None or not h.remote.done()]

    def close(self) -> None:
        with self._lock:
            self._closed = True
        pending = self._data
        if pending is not None and pending.exception() is None:
            # the workers' benches of this run hold GPU memory: let it go
            self.client.run(_forget, pending.result()[2])
        if self._owned:
            cluster = getattr(self.client, "cluster", None)
            self.client.close()
            if cluster is not None:
                cluster.close()


class _Handed:
    """A kernel handed to a worker: `remote`, its Dask future once sent; `moved` once it was
    handed to another worker instead (its answer here, if any, is not waited for)."""

    __slots__ = ("worker", "built", "best", "future", "remote", "moved")

    def __init__(self, worker: str, built: Built, best: float, future: Future) -> None:
        self.worker, self.built, self.best, self.future = worker, built, best, future
        self.remote = None
        self.moved = False


def connect(cluster, kind: str):
    """A Dask client: `cluster` itself, one connected to its address, or a new local cluster."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise TuneError(
            "measuring on a cluster needs Dask: pip install 'schedlang[distributed]'"
        ) from None
    if _is_client(cluster):
        return cluster
    if cluster != "local":
        return Client(cluster)
    if kind == "cuda":
        from dask_cuda import LocalCUDACluster

        return Client(LocalCUDACluster(threads_per_worker=1))
    from ..platform_info import usable_cores

    return Client(LocalCluster(n_workers=max(1, usable_cores() // 2), threads_per_worker=1))


def _on_this_machine(address: str) -> bool:
    from distributed.comm import parse_address, parse_host_port
    from distributed.utils import get_ip

    scheme, location = parse_address(address)
    if scheme == "inproc":
        return True
    try:
        host, _ = parse_host_port(location)
        return host in {"127.0.0.1", "localhost", "::1", get_ip()}
    except (OSError, ValueError):
        return False


def _is_client(value) -> bool:
    return type(value).__name__ == "Client" and type(value).__module__.startswith("distributed")


_benches: dict[str, Bench] = {}  # by the key of the run's data on the cluster
_benches_lock = threading.Lock()


def _described(kind: str) -> tuple[str, str | None]:
    """On a worker: its device's name and architecture; CUDA starts there meanwhile, before
    the run's data arrives."""
    arch = device_arch(kind)
    start_cuda(arch)
    return device_name(kind), arch


def _bench_remote(blob: bytes, settings: tuple, inputs: list, expected: list, key: str) -> Bench:
    """On a worker: its bench for the run whose reference has `key`, made at the first call."""
    import cloudpickle

    kind, sizes, repeat = settings
    with _benches_lock:
        bench = _benches.get(key)
        if bench is None:
            task = cloudpickle.loads(blob)
            bench = _benches[key] = Bench(task, kind, (inputs, expected), sizes, repeat)
    return bench


def _warm_remote(blob: bytes, settings: tuple, inputs: list, expected: list, key: str) -> None:
    """On a worker, before its first kernel arrives: its bench made."""
    _bench_remote(blob, settings, inputs, expected, key)


def _measure_remote(blob, settings, inputs, expected, key, built: Built, best: float) -> tuple:
    """On a worker: `built` measured with the worker's bench for this run."""
    bench = _bench_remote(blob, settings, inputs, expected, key)
    return (*timed(bench, built, best), device_name(settings[0]))


def _better_remote(key: str, seconds: float) -> None:
    """On a worker: the run's best time so far, for its bench's next kernels."""
    with _benches_lock:
        bench = _benches.get(key)
    if bench is not None:
        bench.best = min(bench.best, seconds)


def _forget(key: str) -> None:
    with _benches_lock:
        _benches.pop(key, None)
