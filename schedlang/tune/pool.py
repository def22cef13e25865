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
import subprocess
import sys
import threading
from concurrent.futures import Future

from .building import Built
from .worker import receive, send


class Workers:
    """`count` compile processes for one task; `submit` a configuration number."""

    def __init__(self, task, target: str, count: int) -> None:
        import cloudpickle

        self._hello = (cloudpickle.dumps(task), target)
        self._queue: queue.Queue = queue.Queue()
        self._processes: list[subprocess.Popen] = []
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
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=5)
        for process in list(self._processes):
            if process.poll() is None:
                process.kill()
            process.wait()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> subprocess.Popen:
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
            if item is None:
                break
            number, future = item
            if process is None:
                process = self._start()
            try:
                send(process.stdin, number)
                future.set_result(receive(process.stdout))
            except (EOFError, OSError, BrokenPipeError):
                code = process.wait()
                message = f"the compile process died (exit code {code}) building it"
                future.set_result(Built(number, "failed", "", message, 0.0))
                process = None
        if process is not None:
            process.stdin.close()
            process.wait(timeout=10)
