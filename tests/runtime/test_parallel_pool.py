"""The native pool behind CPU parallel loops: chunks, thread counts, fork, concurrent callers.

The pool is loaded once per process with its thread count fixed, so what depends on the count
or on a fresh process runs in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import schedlang as sl

_KERNEL = """
import numpy as np
import schedlang as sl

n = sl.var("n")
a = sl.placeholder((n,), name="A")
c = sl.compute((n,), lambda i: a[i] * 2.0 + i.astype("float32"), name="C")
s = sl.create_schedule(c)
s[c].parallel(c.op.axis[0])
kernel = sl.build(s, [a, c])

def check(size):
    x = np.random.default_rng(size).standard_normal(size).astype(np.float32)
    out = np.full(size, np.nan, np.float32)
    kernel(x, out)
    return bool(np.array_equal(out, x * 2.0 + np.arange(size, dtype=np.float32)))
"""


def _python(script: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=timeout,
    )


@pytest.mark.parametrize("threads", ["1", "3", "7"])
def test_every_iteration_runs_once_for_any_thread_count(threads):
    script = _KERNEL + textwrap.dedent(
        """
        from schedlang.runtime.parallel import started_workers
        sizes = [1, 2, 3, 5, 6, 7, 8, 13, 64, 1000, 4099]
        print(all(check(size) for size in sizes), started_workers())
        """
    )
    done = _python(script, SCHEDLANG_NUM_THREADS=threads)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", str(int(threads) - 1)]


def test_a_forked_child_runs_parallel_loops_with_its_own_threads():
    script = _KERNEL + textwrap.dedent(
        """
        import multiprocessing, os
        from schedlang.runtime.parallel import started_workers

        assert check(100_000) and started_workers() == 2

        def child(size):
            before = started_workers()
            return before, check(size), started_workers()

        with multiprocessing.get_context("fork").Pool(2) as pool:
            results = pool.map(child, [10_000, 3, 777, 50_000])
        print(all(ok and after == 2 for _, ok, after in results))
        pid = os.fork()
        if pid == 0:
            os._exit(0 if child(12_345) == (0, True, 2) else 1)
        print(os.waitpid(pid, 0)[1], check(99), started_workers())
        """
    )
    done = _python(script, timeout=120, SCHEDLANG_NUM_THREADS="3")
    assert done.returncode == 0, done.stderr
    pooled, forked = done.stdout.strip().splitlines()
    assert pooled == "True"
    assert forked == "0 True 2"  # no worker survives fork: the child starts its own


def test_a_thread_count_that_is_not_a_count_is_refused():
    script = """
        import schedlang as sl

        a = sl.placeholder((8,), name="A")
        c = sl.compute((8,), lambda i: a[i] + 1.0, name="C")
        s = sl.create_schedule(c)
        s[c].parallel(c.op.axis[0])
        try:
            sl.build(s, [a, c])
        except sl.LaunchError as error:
            print(error)
    """
    done = _python(script, SCHEDLANG_NUM_THREADS="many")
    assert done.returncode == 0, done.stderr
    assert "SCHEDLANG_NUM_THREADS='many' is not a thread count" in done.stdout


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_threads_start_with_the_first_parallel_loop_only():
    script = """
        import os
        import numpy as np
        import schedlang as sl

        def threads():
            return len(os.listdir("/proc/self/task"))

        a = sl.placeholder((64,), name="A")
        c = sl.compute((64,), lambda i: a[i] + 1.0, name="C")
        serial = sl.build(sl.create_schedule(c), [a, c])
        x, out = np.ones(64, np.float32), np.empty(64, np.float32)
        before = threads()
        serial(x, out)
        after_serial = threads()
        s = sl.create_schedule(c)
        s[c].parallel(c.op.axis[0])
        sl.build(s, [a, c])(x, out)
        print(after_serial - before, threads() - after_serial)
    """
    done = _python(script, SCHEDLANG_NUM_THREADS="4")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "3"]


def test_kernels_called_from_several_threads_at_once():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * a[i] - 1.0, name="C")
    s = sl.create_schedule(c)
    s[c].parallel(c.op.axis[0])
    kernel = sl.build(s, [a, c])
    failures: list[int] = []

    def calls(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(200):
            x = rng.standard_normal(int(rng.integers(1, 3000))).astype(np.float32)
            out = np.full_like(x, np.nan)
            kernel(x, out)
            if not np.array_equal(out, x * x - 1.0):
                failures.append(seed)

    workers = [threading.Thread(target=calls, args=(seed,)) for seed in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failures == []
