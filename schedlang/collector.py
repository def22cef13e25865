"""Python's cyclic garbage collector paused while schedlang compiles.

A build allocates hundreds of thousands of small objects (loop-IR nodes, isl and llvmlite
wrappers) that all live until it ends. CPython's collector runs whenever allocations outnumber
deallocations by 700 and scans the whole heap whenever the survivors grew by a quarter: on the
GPU GEMM of ``examples/gpu_gemm.py`` it did so again and again, about a tenth of the build, and
found little, as a build makes little cyclic garbage. `paused` holds collection until the
outermost compile returns; collection then resumes as before and reclaims whatever cycles the
build left (llvmlite's modules are cyclic).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_state = {"depth": 0, "resume": False}  # compiles under way; whether collection was enabled


@contextmanager
def paused() -> Iterator[None]:
    """Collection held for the duration of the block (nested blocks and threads count as one
    pause; collection is enabled again only if it was enabled before the first)."""
    with _lock:
        if _state["depth"] == 0:
            _state["resume"] = gc.isenabled()
            gc.disable()
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0 and _state["resume"]:
                gc.enable()
