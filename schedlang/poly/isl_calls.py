"""Calls into isl that stay interruptible and bounded.

islpy runs a Python callback (an AST build's `at_each_domain`, a `foreach_*`) from inside isl;
an exception raised there, Ctrl-C's KeyboardInterrupt among them, is printed and turned into a
failure of the whole isl call (an `islpy.Error` with no message), and an interrupt raised as
islpy enters the callback corrupted the heap. So Ctrl-C in a notebook did not stop a build, or
crashed the kernel. Around such a call, `Callbacks` only notes a Ctrl-C (its handler raises
nothing), its callbacks then skip their work, and the Ctrl-C is delivered to the previous
handler when isl returns; an exception a callback raises is kept and raised then too.

isl holds the GIL while it computes, so Python's own handler cannot interrupt one long isl
operation: during a build, `schedlang.runtime.interrupt` puts a native handler first, which
aborts isl's context, and registers itself here as the `deferral` that callbacks use instead of
a Python handler (the native one must stay installed).

Where a question can grow without bound (recovering loop indices from a fused index, whose
cases multiply with each loop fused), `budget` bounds isl's own count of operations, and the caller
refuses the schedule when isl runs out, instead of computing for minutes.
"""

from __future__ import annotations

import ctypes
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

import islpy as isl


class Deferral(Protocol):
    """A SIGINT handler that can hold a Ctrl-C back while isl runs Python callbacks."""

    def defer(self) -> int:
        """Hold Ctrl-C back from now; the previous state, for `resume`."""

    def pending(self) -> bool:
        """A Ctrl-C came while held back."""

    def resume(self, previous: int) -> bool:
        """Go back to `previous`; True where a held-back Ctrl-C is now to be delivered."""


deferral: Deferral | None = None  # the handler installed for the build in progress, if any


class Callbacks:
    """The Python callbacks of one isl call: use it as a context manager around the call."""

    def __init__(self) -> None:
        self.raised: BaseException | None = None
        self.interrupted = False
        self._previous = None  # the SIGINT handler to restore
        self._deferral: Deferral | None = None
        self._outer = 0  # the deferral's state before this call

    def wrap(self, fn: Callable, skipped: Callable = lambda *args: None) -> Callable:
        """`fn` for isl. Once interrupted, or once `fn` has raised, later calls return
        ``skipped(*args)`` instead (an AST callback's node, unchanged), and isl finishes with
        cheap callbacks; `__exit__` raises what `fn` raised."""

        def called(*args):
            if self.interrupted or self.raised is not None or self._held():
                return skipped(*args)
            try:
                return fn(*args)
            except BaseException as error:  # SystemExit included
                self.raised = error
                return skipped(*args)

        return called

    def _note(self, signum, frame) -> None:
        self.interrupted = True

    def _held(self) -> bool:
        return self._deferral is not None and self._deferral.pending()

    def __enter__(self) -> Callbacks:
        main = threading.current_thread() is threading.main_thread()
        if main and deferral is not None:
            self._deferral = deferral
            self._outer = deferral.defer()
        elif main and signal.getsignal(signal.SIGINT) is not None:
            self._previous = signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(self, kind, value, tb) -> bool:
        if self._deferral is not None and self._deferral.resume(self._outer):
            self.interrupted = True
            signal.raise_signal(signal.SIGINT)  # now to Python's handler, through the native one
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            if self.interrupted:
                signal.raise_signal(signal.SIGINT)  # to the handler Ctrl-C was meant for
        if self.raised is not None:
            raise self.raised from None  # isl's messageless error says nothing more
        return False


class OutOfOperations(Exception):
    """isl ran out of the operations `budget` allowed."""


# The limit and the count are the context's, shared by every thread: two threads' budgets
# interleaved would each restore the other's limit, and the last would leave one set for
# good (every later isl call then fails once the count reaches it). One budget at a time.
_BUDGETS = threading.RLock()


@contextmanager
def budget(ctx: isl.Context, operations: int) -> Iterator[None]:
    """Let isl compute at most `operations` steps (its count: pivots of its tableaux and the
    like) in the block; `OutOfOperations` where it needs more. The ctx's limit is restored.
    Another thread's budget waits for this one (isl's work in other threads meanwhile counts
    against it too)."""
    with _BUDGETS:
        previous = ctx.get_max_operations()
        ctx.reset_operations()
        ctx.set_max_operations(operations)
        try:
            yield
        except isl.Error as error:
            if "maximal number of operations" not in str(error):
                raise
            raise OutOfOperations(str(error)) from None
        finally:
            ctx.set_max_operations(previous)
            ctx.reset_operations()


CHECK_OPERATIONS = 987_654_321  # a value no build sets, to recognise the context by


def abort_addresses() -> tuple[int, int] | None:
    """The address of the ``isl_ctx`` that schedlang computes in (islpy's default context) and
    of ``isl_ctx_abort``, which a native SIGINT handler calls; None where either is not found
    for sure. islpy publishes neither: the context's is read from nanobind's instance record
    and checked by a round trip through ``isl_ctx_get_max_operations``."""
    library = ctypes.CDLL(isl._isl.__file__)
    ctx = context_address(isl.DEFAULT_CONTEXT, library)
    if ctx is None:
        return None
    return ctx, ctypes.cast(library.isl_ctx_abort, ctypes.c_void_p).value


def resume_after_abort() -> None:
    """Let isl compute again after a native handler aborted its context."""
    if isl.DEFAULT_CONTEXT.aborted():
        isl.DEFAULT_CONTEXT.resume()


def context_address(ctx: isl.Context, library: ctypes.CDLL) -> int | None:
    """The ``isl_ctx *`` that `ctx` wraps, or None where it cannot be found for sure.

    nanobind's instance record is the object header, a 32-bit offset to the C++ object and a
    word of flags whose third bit says whether the object is stored inline (else the offset
    leads to a pointer to it); islpy's context object holds the ``isl_ctx *`` first."""
    header = sys.getsizeof(object())  # refcount and type: 16 bytes
    if type(ctx).__basicsize__ < header + 16:
        return None
    offset = ctypes.c_int32.from_address(id(ctx) + header).value
    flags = ctypes.c_uint32.from_address(id(ctx) + header + 4).value
    if offset != header + 8:
        return None
    stored = ctypes.c_void_p.from_address(id(ctx) + offset).value
    if not stored:
        return None
    address = stored if flags & 4 else ctypes.c_void_p.from_address(stored).value
    if not address:
        return None
    read = library.isl_ctx_get_max_operations
    read.restype, read.argtypes = ctypes.c_ulong, [ctypes.c_void_p]
    before = ctx.get_max_operations()
    ctx.set_max_operations(CHECK_OPERATIONS)
    try:
        seen = read(address)
    finally:
        ctx.set_max_operations(before)
    return address if seen == CHECK_OPERATIONS else None
