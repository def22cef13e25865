"""The pool of threads behind ``parallel`` loops on the CPU, loaded once per process.

The fork-join itself is native code (`schedlang.codegen.cpu.pool`), compiled by LLVM the first
time a kernel with a ``parallel`` loop is built in a process (the disk cache keeps the object
file, so later processes only link it) and never unloaded: its threads and its fork handler
live as long as the process. Kernels call it by address and never call back into Python
(but for the packed calls of declared intrinsics, `packed_calls`).

The pool has `parallel_threads()` participants, the caller included, fixed when it is loaded:
``schedlang info``'s usable cores, or ``SCHEDLANG_NUM_THREADS``. With one, loops run serially.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
from pathlib import Path

from ..codegen import disk_cache
from ..codegen.cpu import linker
from ..codegen.cpu.host_key import host_key
from ..codegen.cpu.object_loader import process_symbol
from ..errors import LaunchError
from ..loopir.core.nodes import For, LoweredFunc
from ..loopir.core.visit import walk_stmt
from ..platform_info import parallel_threads
from .packed_calls import trampolines


class _Pool:
    """The linked runtime: its addresses, and the objects that keep its code mapped."""

    def __init__(self) -> None:
        from ..codegen.cpu import pool_abi as pool

        try:
            threads = parallel_threads()
        except ValueError as error:
            raise LaunchError(str(error)) from None
        atfork = _atfork(pool.ATFORK_NAMES)
        texts: list[str] = []

        def compiled() -> bytes:
            from ..codegen.cpu import jit as cpu_jit
            from ..codegen.cpu.pool import pool_module  # the generator: a process's first pool

            texts.append(pool_module(cpu_jit.host().triple, atfork))
            return cpu_jit.object_code(texts[0])

        obj = disk_cache.load_or_make(_disk_path(pool.version(atfork)), compiled)
        text = texts[0] if texts else "(the pool's object file, read from the disk cache)"
        symbols = (pool.PARALLEL_FOR, pool.SETUP, pool.STARTED)
        self._linked, addresses = linker.link_symbols(obj, symbols, {}, text)
        self.parallel_for = addresses[pool.PARALLEL_FOR]
        setup = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(addresses[pool.SETUP])
        self.started = ctypes.CFUNCTYPE(ctypes.c_int32)(addresses[pool.STARTED])
        if setup(threads) != 0:
            raise LaunchError("the CPU's parallel runtime could not register its fork handler")


def _atfork(names: tuple[str, ...]) -> str:
    for name in names:
        if process_symbol(name):
            return name
    raise LaunchError(
        "the C library has neither of " + " and ".join(names) + ": parallel loops "
        "cannot be made safe across fork() here; remove `parallel` from the schedule"
    )


@functools.cache
def _pool() -> _Pool:
    return _Pool()


def runtime_imports(func: LoweredFunc) -> dict[str, int]:
    """The runtime's symbols the CPU code of `func` calls (name -> address): the pool is
    loaded only for kernels with a parallel loop; the callbacks of packed calls
    (`packed_calls`) only for kernels that make them."""
    found = {t.site.symbol: t.address for t in trampolines(func)}
    for stmt in walk_stmt(func.body):
        if isinstance(stmt, For) and stmt.kind == "parallel":
            from ..codegen.cpu.pool_abi import PARALLEL_FOR

            found[PARALLEL_FOR] = _pool().parallel_for
            break
    return found


def started_workers() -> int:
    """Worker threads running in this process now (0 before its first parallel loop, and
    in a forked child until its own first one)."""
    return _pool().started()


def _disk_path(version: str) -> Path | None:
    """Where the pool's object file is cached: under its generator's `version`, so that no
    IR is made to find it."""
    folder = disk_cache.directory()
    if folder is None:
        return None
    digest = hashlib.sha256(f"{version} {host_key()}".encode()).hexdigest()
    return folder / f"pool-{digest}.o"
