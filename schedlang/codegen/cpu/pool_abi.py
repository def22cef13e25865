"""How the runtime finds the parallel pool (`pool`) in its object file: the symbols, the fork
handler's registration function, and the version its cached object is filed under. Apart from
the generator, so that a process linking the cached object makes no IR."""

from __future__ import annotations

import hashlib
from pathlib import Path

from llvmlite import __version__ as llvmlite_version

PARALLEL_FOR = "schedlang_parallel_for"
SETUP = "schedlang_pool_setup"  # (threads) -> pthread_atfork's status, once per process
STARTED = "schedlang_pool_started"  # () -> the worker threads running now

# glibc exports ``__register_atfork`` (its ``pthread_atfork`` is linked statically into each
# program); other C libraries export ``pthread_atfork`` itself
ATFORK_NAMES = ("__register_atfork", "pthread_atfork")


def version(atfork: str) -> str:
    """What the pool's machine code depends on besides the host: its generator's source,
    LLVM's version and the fork-handler function."""
    source = hashlib.sha256((Path(__file__).parent / "pool.py").read_bytes()).hexdigest()
    return f"{source} {llvmlite_version} {atfork}"
