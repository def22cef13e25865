"""The thread pool behind ``parallel`` loops on the CPU.

Compiled kernels call ``schedlang_parallel_for(task, closure, n)`` (see
`schedlang.codegen.cpu.parallel`), which is `parallel_for` below behind a ctypes callback. It
cuts ``[0, n)`` into one contiguous chunk per core and runs ``task(closure, lo, hi)`` on them:
the first chunk in the calling thread, the others on a pool of ``workers() - 1`` threads.
ctypes releases the GIL for the duration of each foreign call, so the chunks run in parallel.
"""

from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor

from ..codegen.llvm.function import PARALLEL_FAILED
from ..platform_info import usable_cores

TASK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
PARALLEL_FOR = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_state = threading.local()  # parallel_for runs in the thread that called the kernel


def workers() -> int:
    """Threads that run parallel loops: one per core this process may run on."""
    return usable_cores()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(workers() - 1 or 1, thread_name_prefix="schedlang")
        return _pool


def chunks(n: int, parts: int) -> list[tuple[int, int]]:
    """``[0, n)`` as at most `parts` contiguous, nonempty ranges of near-equal size."""
    parts = max(1, min(parts, n))
    size, extra = divmod(n, parts)
    ranges, lo = [], 0
    for k in range(parts):
        hi = lo + size + (1 if k < extra else 0)
        ranges.append((lo, hi))
        lo = hi
    return ranges if n > 0 else []


def parallel_for(task_address: int, closure: int, n: int) -> int:
    """Run ``task(closure, lo, hi)`` over ``[0, n)``; the worst status the chunks return."""
    try:
        task = TASK(task_address)
        ranges = chunks(n, workers())
        if not ranges:
            return 0
        futures = [_executor().submit(task, closure, lo, hi) for lo, hi in ranges[1:]]
        status = task(closure, *ranges[0])
        for future in futures:
            status = max(status, future.result())
        return status
    except BaseException as error:  # an exception must not cross the C frames of the kernel
        _state.error = error
        return PARALLEL_FAILED


def take_error() -> BaseException | None:
    """The exception that made `parallel_for` fail in this thread, once."""
    error = getattr(_state, "error", None)
    _state.error = None
    return error


_callback = PARALLEL_FOR(parallel_for)


def parallel_for_address() -> int:
    """The address compiled kernels call for ``schedlang_parallel_for``."""
    return ctypes.cast(_callback, ctypes.c_void_p).value
