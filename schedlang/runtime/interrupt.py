"""Ctrl-C during a build: the native SIGINT handler (`schedlang.codegen.cpu.interrupt`) around it.

`interruptible()` wraps a build. Inside it, SIGINT goes first to native code that aborts isl's
context, so that a long isl call returns at its next counted step, and then to Python's own
handler, so that the ``KeyboardInterrupt`` follows as soon as isl has returned. On the way out
the previous handler is restored and the context resumed, so that isl works again afterwards.

The handler needs two addresses islpy does not publish, the context's and ``isl_ctx_abort``'s
(`poly.isl_calls.abort_addresses`). Where they are not found for sure, or the process is not
on Linux with glibc (whose ``struct sigaction`` this reads), or the build runs outside the main
thread, or SIGINT is not Python's, builds run as before: a Ctrl-C then waits for the isl call
in progress to return.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..codegen import disk_cache
from ..poly import isl_calls

SA_SIGINFO = 4  # Linux's flag for a three-argument handler, which this never chains to
SIGACTION_BYTES = 256  # more than glibc's struct sigaction (152 bytes on x86-64 and aarch64)
SA_FLAGS_OFFSET = 8 + 128  # after the handler and the 1024-bit mask


class _State(ctypes.Structure):
    _fields_ = [
        ("ctx", ctypes.c_void_p),
        ("abort", ctypes.c_void_p),
        ("previous", ctypes.c_void_p),
        ("defer", ctypes.c_int32),
        ("pending", ctypes.c_int32),
    ]


class _Handler:
    """The linked handler, its state record, and what `interruptible` installed."""

    def __init__(self, ctx_address: int, abort: int) -> None:
        from ..codegen.cpu import interrupt, linker
        from ..codegen.cpu import jit as cpu_jit

        texts: list[str] = []

        def compiled() -> bytes:
            texts.append(interrupt.interrupt_module(cpu_jit.host().triple))
            return cpu_jit.object_code(texts[0])

        obj = disk_cache.load_or_make(_disk_path(interrupt.version()), compiled)
        text = texts[0] if texts else "(the interrupt handler's object file, from the disk cache)"
        symbols = (interrupt.HANDLER, interrupt.STATE)
        self._linked, addresses = linker.link_symbols(obj, symbols, {}, text)
        self.address = addresses[interrupt.HANDLER]
        state = ctypes.CFUNCTYPE(ctypes.c_void_p)(addresses[interrupt.STATE])()
        self.state = _State.from_address(state)
        self.state.ctx = ctx_address
        self.state.abort = abort
        self.depth = 0  # nested `interruptible` blocks
        self.saved = ctypes.create_string_buffer(SIGACTION_BYTES)  # the handler replaced

    def install(self) -> bool:
        """Put the handler in place of Python's; False (nothing changed) where SIGINT is not
        Python's own handler."""
        libc = _libc()
        current = ctypes.create_string_buffer(SIGACTION_BYTES)
        if libc.sigaction(signal.SIGINT, None, current) != 0:
            return False
        previous = ctypes.c_void_p.from_buffer(current).value or 0
        flags = ctypes.c_int32.from_buffer(current, SA_FLAGS_OFFSET).value
        if previous <= 1 or flags & SA_SIGINFO:  # SIG_DFL, SIG_IGN, or not a plain handler
            return False
        ctypes.memmove(self.saved, current, SIGACTION_BYTES)
        self.state.previous = previous
        self.state.defer = self.state.pending = 0
        ctypes.c_void_p.from_buffer(current).value = self.address
        return libc.sigaction(signal.SIGINT, current, None) == 0

    def uninstall(self) -> None:
        """Give SIGINT back to the handler `install` replaced, unless someone has replaced
        ours meanwhile."""
        libc = _libc()
        current = ctypes.create_string_buffer(SIGACTION_BYTES)
        libc.sigaction(signal.SIGINT, None, current)
        if ctypes.c_void_p.from_buffer(current).value == self.address:
            libc.sigaction(signal.SIGINT, self.saved, None)

    # `isl_calls.Deferral`: while isl runs Python callbacks

    def defer(self) -> int:
        previous = self.state.defer
        self.state.defer = 1
        return previous

    def pending(self) -> bool:
        return bool(self.state.pending)

    def resume(self, previous: int) -> bool:
        self.state.defer = previous
        if previous or not self.state.pending:
            return False
        self.state.pending = 0
        return True


@contextmanager
def interruptible() -> Iterator[None]:
    """Make Ctrl-C stop the isl calls of the block too (see the module's docstring)."""
    handler = _handler() if threading.current_thread() is threading.main_thread() else None
    if handler is None or (handler.depth == 0 and not _python_owns_sigint()):
        yield
        return
    if handler.depth == 0 and not handler.install():
        yield
        return
    handler.depth += 1
    outer = isl_calls.deferral
    isl_calls.deferral = handler
    try:
        yield
    finally:
        isl_calls.deferral = outer
        handler.depth -= 1
        if handler.depth == 0:
            handler.uninstall()
        isl_calls.resume_after_abort()


def _python_owns_sigint() -> bool:
    return callable(signal.getsignal(signal.SIGINT))


@functools.cache
def _handler() -> _Handler | None:
    if sys.platform != "linux" or not _glibc():
        return None
    found = isl_calls.abort_addresses()
    return None if found is None else _Handler(*found)


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.sigaction.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    libc.sigaction.restype = ctypes.c_int
    return libc


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):
        return False


def _disk_path(version: str) -> Path | None:
    from ..codegen.cpu.host_key import host_key

    folder = disk_cache.directory()
    if folder is None:
        return None
    digest = hashlib.sha256(f"{version} {host_key()}".encode()).hexdigest()
    return folder / f"interrupt-{digest}.o"
