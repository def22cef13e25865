"""Where built configurations are measured: here, on this process's device, or on the workers
of a Dask cluster, one per GPU.

Both hand back a `concurrent.futures.Future` of ``(status, seconds, error, measure_s,
device)``, so the
runner treats them alike. On a cluster each worker process keeps one `Bench` per task (its
reference computed once, its inputs on its GPU) and measures one kernel at a time; its threads
take turns (`bench._measuring`).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from .bench import Bench, bench_data, bench_inputs, bench_reference
from .building import Built
from .knobs import TuneError


def device_name(kind: str) -> str:
    """What measures here: the GPU's name and architecture, or the host CPU."""
    if kind == "cuda":
        return f"{_gpu().name} ({_gpu().arch})"
    from ..codegen.cpu import jit as cpu_jit
    from ..platform_info import usable_cores

    return f"{cpu_jit.host().target.cpu} CPU, {usable_cores()} cores"


def _gpu():
    from ..platform_info import cuda_devices

    return cuda_devices()[0]


def _arch(kind: str) -> str | None:
    """The architecture kernels are compiled for where they are measured (None: the CPU)."""
    return _gpu().arch if kind == "cuda" else None


class Here:
    """Measuring in this process. The reference is computed on a thread from `start` on,
    beside the first compiles (numpy lets go of the interpreter while it multiplies)."""

    def __init__(self, task, kind: str, seed: int, sizes, repeat: int) -> None:
        self.device, self.arch = device_name(kind), _arch(kind)
        self.overlaps_compiles = kind == "cuda"  # timing a CPU kernel needs the cores
        self._make = lambda: Bench(task, kind, bench_data(task, seed, sizes), sizes, repeat)
        self._bench: Future | None = None

    def start(self) -> None:
        """Begin computing the reference (a run with configurations to measure calls it),
        and starting CUDA where kernels run on it."""
        _start_cuda(self.arch)
        self._bench = _background(self._make)

    def submit(self, built: Built, best: float) -> Future:
        future: Future = Future()
        future.set_result((*_timed(self._bench.result(), built, best), self.device))
        return future

    def close(self) -> None:
        if self._bench is not None:
            self._bench.exception()  # waits for the thread; its error, if any, was the run's


class OnCluster:
    """Measuring on a Dask cluster's workers (`cluster`: a Client, a scheduler address, or
    "local" for a cluster of this machine: one worker per GPU with dask-cuda, else per core)."""

    def __init__(self, cluster, task, kind: str, seed: int, sizes, repeat: int) -> None:
        import cloudpickle

        self.client = connect(cluster, kind)
        self._owned = not _is_client(cluster)
        self._data: Future | None = None
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
        self._data = _background(self._start)

    def _prepare(self, task, seed, sizes, workers) -> tuple:
        """The run's data on every worker, as the futures of its inputs and its reference:
        the inputs travel while the reference is computed."""
        inputs, bound = bench_inputs(task, seed, sizes)
        sending = _background(lambda: self.client.scatter([inputs], broadcast=True)[0])
        [expected] = self.client.scatter([bench_reference(task, inputs, bound)], broadcast=True)
        data = (sending.result(), expected, expected.key)
        arguments = (self._blob, self._settings, *data)
        self._warming = [  # held: Dask drops a task whose future nobody holds
            self.client.submit(_warm_remote, *arguments, workers=[worker], pure=False)
            for worker in workers
        ]
        return data

    def submit(self, built: Built, best: float) -> Future:
        future: Future = Future()
        arguments = (self._blob, self._settings, *self._data.result(), built, best)
        remote = self.client.submit(_measure_remote, *arguments, pure=False)

        def settle(done) -> None:
            try:
                future.set_result(done.result())
            except Exception as error:  # the worker died or the task was lost
                failed = ("failed", None, f"measuring on the cluster: {error}", 0.0, "?")
                future.set_result(failed)

        remote.add_done_callback(settle)
        return future

    def close(self) -> None:
        pending = self._data
        if pending is not None and pending.exception() is None:
            # the workers' benches of this run hold GPU memory: let it go
            self.client.run(_forget, pending.result()[2])
        if self._owned:
            cluster = getattr(self.client, "cluster", None)
            self.client.close()
            if cluster is not None:
                cluster.close()


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


def _is_client(value) -> bool:
    return type(value).__name__ == "Client" and type(value).__module__.startswith("distributed")


_benches: dict[str, Bench] = {}  # by the key of the run's data on the cluster
_benches_lock = threading.Lock()


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
    return (*_timed(bench, built, best), device_name(settings[0]))


def _forget(key: str) -> None:
    with _benches_lock:
        _benches.pop(key, None)


def _described(kind: str) -> tuple[str, str | None]:
    """On a worker: its device's name and architecture; CUDA starts there meanwhile, before
    the run's data arrives."""
    arch = _arch(kind)
    _start_cuda(arch)
    return device_name(kind), arch


def _start_cuda(arch: str | None) -> None:
    """CUDA's context and PTX compiler started on a thread of this process (`cuda_start`),
    where kernels for `arch` will run."""
    if arch is not None:
        from ..runtime import cuda_start

        cuda_start.start()


def _timed(bench: Bench, built: Built, best: float) -> tuple:
    """`bench.measure`'s answer and the seconds it took (loading, checking and timing)."""
    start = time.perf_counter()
    answer = bench.measure(built, best)
    return (*answer, time.perf_counter() - start)


def _background(make) -> Future:
    """``make()`` on a thread of its own; its result (or error) in the future."""
    future: Future = Future()

    def work() -> None:
        try:
            future.set_result(make())
        except BaseException as error:  # noqa: BLE001 - handed to whoever asks the future
            future.set_exception(error)

    threading.Thread(target=work, name="schedlang-tune-bench", daemon=True).start()
    return future
