"""Compile processes: configurations built in parallel, each process answering one at a time.

They are started as ``python -m schedlang.tune.worker`` rather than by `multiprocessing`:
its start methods either fork a process that may hold CUDA and threads, or import the user's
``__main__`` again in every child (which runs a script's top level once more unless it is
guarded, the trap AutoTVM's tutorials warn about). A process that dies (LLVM aborting on a
schedule, say) fails only the configuration it was building; the next one starts afresh.
"""

from __future__ import annotations

import os
import queue
import select
import subprocess
import sys
import threading
from concurrent.futures import Future

from .building import Built
from .worker import receive, send


class Workers:
    """`count` compile processes for one task; `submit` a configuration number. A build that
    takes longer than `timeout` seconds (None: no limit) has its process stopped and fails."""

    def __init__(self, task, target: str, count: int, timeout: float | None = None) -> None:
        import cloudpickle

        self._timeout = timeout
        self._hello = (cloudpickle.dumps(task), target)
        self._queue: queue.Queue = queue.Queue()
        self._processes: list[subprocess.Popen] = []
        self._closed = False
        self._threads = [
            threading.Thread(target=self._serve, name=f"schedlang-compile-{k}", daemon=True)
            for k in range(count)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, number: int) -> Future:
        future: Future = Future()
        self._queue.put((number, future))
        return future

    def close(self) -> None:
        """Stop: configurations not yet started are dropped, the processes are killed."""
        self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                item[1].cancel()
        for _ in self._threads:
            self._queue.put(None)
        for _ in range(2):  # again after the threads stop: one may have started a process
            for process in list(self._processes):
                if process.poll() is None:
                    process.kill()
                process.wait()
            for thread in self._threads:
                thread.join(timeout=5)

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        send(process.stdin, self._hello)
        return process

    def _serve(self) -> None:
        process = None
        while True:
            item = self._queue.get()
            if item is None or self._closed:
                break
            number, future = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                if process is None:
                    process = self._start()
                send(process.stdin, number)
                if self._timeout is not None:
                    ready, _, _ = select.select([process.stdout], [], [], self._timeout)
                    if not ready:
                        process.kill()
                        process.wait()
                        process = None
                        message = f"building it took longer than {self._timeout:g} s; stopped"
                        future.set_result(Built(number, "failed", "", message, self._timeout))
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
