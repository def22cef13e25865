"""Compile processes: configurations built in parallel, each process answering one at a time.

They are started as ``python -m schedlang.tune.worker`` rather than by `multiprocessing`:
its start methods either fork a process that may hold CUDA and threads, or import the user's
``__main__`` again in every child (which runs a script's top level once more unless it is
guarded, the trap AutoTVM's tutorials warn about). A process that dies (LLVM aborting on a
schedule, say) fails only the configuration it was building; the next one starts afresh.

A tuning run makes its own and stops them at its end. Made by hand, ``sl.tune.Compilers``
serves many runs (a notebook tuning one task after another): its processes start, load
schedlang and LLVM once, and each learns a task the first time it builds one of its
configurations.
"""

from __future__ import annotations

import itertools
import os
import queue
import select
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field

from .building import Built
from .messages import receive, send


@dataclass(eq=False)
class Job:
    """A task to build for one target, as the processes learn it."""

    number: int
    blob: bytes  # the task, cloudpickled
    target: str
    futures: set = field(default_factory=set)  # its configurations not yet answered


class Compilers:
    """`count` compile processes (default: the usable cores), started at once. Pass them to
    `sl.tune.run` as ``workers=`` to keep them from one run to the next; `close` stops them
    (or use them as a context manager)."""

    def __init__(self, count: int | None = None) -> None:
        from ..platform_info import usable_cores
        from .knobs import TuneError

        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or count < 1):  # fmt: skip
            raise TuneError(f"Compilers({count!r}): give how many processes to start, at least 1")
        self.count = count or max(1, usable_cores())
        self._queue: queue.Queue = queue.Queue()
        self._processes: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._jobs = itertools.count()
        self._closed = False
        self._loaded = [threading.Event() for _ in range(self.count)]  # each first process
        self._threads = [
            threading.Thread(
                target=self._serve, args=(loaded,), name=f"schedlang-compile-{k}", daemon=True
            )
            for k, loaded in enumerate(self._loaded)
        ]
        for thread in self._threads:
            thread.start()

    def ready(self, timeout: float | None = None) -> bool:
        """Wait until every process has loaded schedlang and LLVM (a benchmark starts its
        clock after this); False if `timeout` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for loaded in self._loaded:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not loaded.wait(left):
                return False
        return True

    def job(self, task, target: str) -> Job:
        """`task` to build for `target` (a resolved target string)."""
        import cloudpickle

        return Job(next(self._jobs), cloudpickle.dumps(task), target)

    def submit(self, job: Job, number: int, timeout: float | None = None) -> Future:
        """Configuration `number` of `job`'s task built; a build that takes longer than
        `timeout` seconds (None: no limit) has its process stopped and fails."""
        if self._closed:
            raise RuntimeError("the compile processes were closed")
        future: Future = Future()
        with self._lock:
            job.futures.add(future)
        future.add_done_callback(lambda done: self._settled(job, done))
        self._queue.put((job, number, timeout, future))
        return future

    def drop(self, job: Job) -> None:
        """`job`'s configurations not yet started are dropped (a run ends); those being built
        finish, unread."""
        with self._lock:
            waiting = list(job.futures)
        for future in waiting:
            future.cancel()

    def close(self) -> None:
        """Stop: configurations not yet started are dropped, the processes are killed."""
        self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[-1].cancel()
        for _ in self._threads:
            self._queue.put(None)
        for _ in range(2):  # again after the threads stop: one may have started a process
            for process in list(self._processes):
                if process.poll() is None:
                    process.kill()
                process.wait()
            for thread in self._threads:
                thread.join(timeout=5)

    def __enter__(self) -> Compilers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _settled(self, job: Job, future: Future) -> None:
        with self._lock:
            job.futures.discard(future)

    def _start(self) -> subprocess.Popen:
        if self._closed:
            raise RuntimeError("the compile processes are stopping")
        # the children import what this process can (a notebook may have extended sys.path)
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
        process = subprocess.Popen(
            [sys.executable, "-m", "schedlang.tune.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._processes.append(process)
        receive(process.stdout)  # ("ready",): it has loaded what builds need
        return process

    def _serve(self, loaded: threading.Event) -> None:
        process, known = None, set()  # the process and the jobs it has been told of
        try:
            process = self._start()  # it loads schedlang and LLVM while the first task comes
        except Exception:  # noqa: BLE001 - closed already, or started again at the first build
            pass
        finally:
            loaded.set()
        while True:
            item = self._queue.get()
            if item is None or self._closed:
                break
            job, number, timeout, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                if process is None or process.poll() is not None:
                    process, known = self._start(), set()
                if job.number not in known:
                    send(process.stdin, ("task", job.number, job.blob, job.target))
                    known.add(job.number)
                send(process.stdin, ("build", job.number, number))
                if timeout is not None:
                    ready, _, _ = select.select([process.stdout], [], [], timeout)
                    if not ready:
                        process.kill()
                        process.wait()
                        process = None
                        message = f"building it took longer than {timeout:g} s; stopped"
                        future.set_result(Built(number, "failed", "", message, timeout))
                        continue
                future.set_result(receive(process.stdout))
            except Exception as error:  # noqa: BLE001 - the process died or garbled its answer
                if process is not None and process.poll() is None:
                    process.kill()
                code = None if process is None else process.wait()
                message = f"the compile process died (exit code {code}) building it"
                if code is None or code == -9:
                    message = f"the compile process failed building it ({error!r})"
                future.set_result(Built(number, "failed", "", message, 0.0))
                process = None
        if process is not None and process.poll() is None:
            process.stdin.close()
            process.wait(timeout=10)
