"""Where built configurations are measured: `Here`, on this process's device, or `OnCluster`
(`cluster`), on the workers of a Dask cluster, one per GPU.

Both hand back a `concurrent.futures.Future` of ``(status, seconds, error, measure_s,
device)``, so the runner treats them alike. What follows serves both: the device's name, CUDA
started early, a measurement timed.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from .bench import Bench, bench_data
from .building import Built


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


def device_arch(kind: str) -> str | None:
    """The architecture kernels are compiled for where they are measured (None: the CPU)."""
    return _gpu().arch if kind == "cuda" else None


class Here:
    """Measuring in this process. The reference is computed on a thread from `start` on,
    beside the first compiles (numpy lets go of the interpreter while it multiplies)."""

    def __init__(self, task, kind: str, seed: int, sizes, repeat: int) -> None:
        self.device, self.arch = device_name(kind), device_arch(kind)
        self.overlaps_compiles = kind == "cuda"  # timing a CPU kernel needs the cores
        self._make = lambda: Bench(task, kind, bench_data(task, seed, sizes), sizes, repeat)
        self._bench: Future | None = None

    def start(self) -> None:
        """Begin computing the reference (a run with configurations to measure calls it),
        and starting CUDA where kernels run on it."""
        start_cuda(self.arch)
        self._bench = background(self._make)

    def submit(self, built: Built, best: float) -> Future:
        future: Future = Future()
        future.set_result((*timed(self._bench.result(), built, best), self.device))
        return future

    def close(self) -> None:
        if self._bench is not None:
            self._bench.exception()  # waits for the thread; its error, if any, was the run's


def start_cuda(arch: str | None) -> None:
    """CUDA's context and PTX compiler started on a thread of this process (`runtime.cuda.start`),
    where kernels for `arch` will run."""
    if arch is not None:
        from ..runtime.cuda import start

        start.start()


def timed(bench: Bench, built: Built, best: float) -> tuple:
    """`bench.measure`'s answer and the seconds it took (loading, checking and timing)."""
    start = time.perf_counter()
    answer = bench.measure(built, best)
    return (*answer, time.perf_counter() - start)


def background(make) -> Future:
    """``make()`` on a thread of its own; its result (or error) in the future."""
    future: Future = Future()

    def work() -> None:
        try:
            future.set_result(make())
        except BaseException as error:  # noqa: BLE001 - handed to whoever asks the future
            future.set_exception(error)

    threading.Thread(target=work, name="schedlang-tune-bench", daemon=True).start()
    return future
