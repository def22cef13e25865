"""The pool of threads behind ``parallel`` loops on the CPU, loaded once per process.

The fork-join itself is native code (`schedlang.codegen.cpu.pool`), compiled by LLVM the first
time a kernel with a ``parallel`` loop is built in a process (the disk cache keeps the object
file, so later processes only link it) and never unloaded: its threads and its fork handler
live as long as the process. Kernels call it by address and never call back into Python.

The pool has `parallel_threads()` participants, the caller included, fixed when it is loaded:
``schedlang info``'s usable cores, or ``SCHEDLANG_NUM_THREADS``. With one, loops run serially.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib

from ..codegen import disk_cache
from ..codegen.cpu import jit as cpu_jit
from ..codegen.cpu.pool import ATFORK_NAMES, PARALLEL_FOR, SETUP, STARTED, pool_module
from ..errors import LaunchError
from ..loopir.nodes import For, LoweredFunc
from ..loopir.visit import walk_stmt
from ..platform_info import parallel_threads


class _Pool:
    """The linked runtime: its addresses, and the objects that keep its code mapped."""

    def __init__(self) -> None:
        try:
            threads = parallel_threads()
        except ValueError as error:
            raise LaunchError(str(error)) from None
        text = pool_module(cpu_jit.host().target.triple, _atfork())
        obj = disk_cache.load_or_make(_disk_path(text), lambda: cpu_jit.object_code(text))
        symbols = (PARALLEL_FOR, SETUP, STARTED)
        self._linked, addresses = cpu_jit.link_symbols(obj, symbols, {}, text)
        self.parallel_for = addresses[PARALLEL_FOR]
        setup = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(addresses[SETUP])
        self.started = ctypes.CFUNCTYPE(ctypes.c_int32)(addresses[STARTED])
        if setup(threads) != 0:
            raise LaunchError("the CPU's parallel runtime could not register its fork handler")


def _atfork() -> str:
    for name in ATFORK_NAMES:
        if cpu_jit.symbol_address(name):
            return name
    raise LaunchError(
        "the C library has neither of " + " and ".join(ATFORK_NAMES) + ": parallel loops "
        "cannot be made safe across fork() here; remove `parallel` from the schedule"
    )


@functools.cache
def _pool() -> _Pool:
    return _Pool()


def runtime_imports(func: LoweredFunc) -> dict[str, int]:
    """The runtime's symbols the CPU code of `func` calls (name -> address): the pool is
    loaded only for kernels with a parallel loop."""
    for stmt in walk_stmt(func.body):
        if isinstance(stmt, For) and stmt.kind == "parallel":
            return {PARALLEL_FOR: _pool().parallel_for}
    return {}


def started_workers() -> int:
    """Worker threads running in this process now (0 before its first parallel loop, and
    in a forked child until its own first one)."""
    return _pool().started()


def _disk_path(text: str):
    folder = disk_cache.directory()
    if folder is None:
        return None
    key = hashlib.sha256(f"{text} {cpu_jit.host().target.key}".encode()).hexdigest()
    return folder / f"pool-{key}.o"
