"""The error hierarchy. Every user-facing failure is a `SchedlangError`.

Messages are written for the person who made the mistake: they name the tensor, stage, primitive
or axis involved, point at the user's line when we know it, and end with what to do. Internal
invariants that break are `InternalError`: those are our bugs, never the user's.

The traceback of a user's mistake ends at the user's line: the functions users call are
`entry_point`s, which drop schedlang's own frames from it (``SCHEDLANG_TRACEBACK=full`` keeps
them). An `InternalError`, and any exception that is not one of ours, keeps every frame.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import sysconfig
import threading
import warnings
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TypeVar

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class SchedlangError(RuntimeError):
    """Base of every error schedlang raises on purpose. A `RuntimeError`, as TE's `TVMError`
    is, so that code written against TE catches schedlang's errors where it caught TE's."""


class AlgorithmError(SchedlangError, ValueError):
    """The algorithm (placeholders, computes, expressions) is malformed or cannot be evaluated."""


class ScheduleError(SchedlangError, ValueError):
    """A schedule primitive got bad arguments, or the schedule is illegal for the algorithm."""


class LoweringError(SchedlangError):
    """A legal schedule asks for something the lowering or the target cannot do."""


class LaunchError(SchedlangError):
    """Running a compiled kernel failed (driver error, resource limit)."""


class SchedlangWarning(UserWarning):
    """A schedule that compiles to slower code than it asks for, with the same results (e.g. a
    vectorized loop that must run as scalars): worth knowing, not worth stopping for."""


class InternalError(SchedlangError):
    """A bug in schedlang. Please report it with the code that triggered it."""


def _is_internal(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)


def _user_frame(skip: int):
    """The innermost frame outside the package, searched from `skip` frames above the caller,
    and its depth counted from there (1 for that frame); None when every frame is ours."""
    level, frame = 1, sys._getframe(skip + 1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        level, frame = level + 1, frame.f_back
    return frame, level


def warn(message: str) -> None:
    """Issue a `SchedlangWarning` attributed to the innermost caller outside the package, so
    Python shows the user's line (as for the errors) and its once-per-line filter applies."""
    for found in getattr(_recording, "lists", ()):
        found.append(message)
    _, level = _user_frame(1)
    warnings.warn(message, SchedlangWarning, stacklevel=level + 1)


_recording = threading.local()


@contextlib.contextmanager
def recorded_warnings() -> Iterator[list[str]]:
    """The messages `warn` issues in this thread inside the block (still issued as usual): a
    build kept on disk says them again when it is loaded instead of built."""
    found: list[str] = []
    lists = _recording.__dict__.setdefault("lists", [])
    lists.append(found)
    try:
        yield found
    finally:
        lists.remove(found)


@contextlib.contextmanager
def located(loc: str) -> Iterator[None]:
    """Inside the block, `user_location` is `loc` in this thread: a primitive applied again
    by a replay (`undo`, `copy`) keeps the line the user wrote it on, in its record and in
    the messages that name it."""
    previous = getattr(_location, "loc", None)
    _location.loc = loc
    try:
        yield
    finally:
        _location.loc = previous


_location = threading.local()


def user_location() -> str:
    """`file.py:LINE` of the innermost caller outside the schedlang package, or ''; in
    IPython and Jupyter, the cell as IPython names it (``Cell In[5], line 8``), since the
    file of a cell is a temporary one whose name means nothing to the user."""
    fixed = getattr(_location, "loc", None)
    if fixed is not None:
        return fixed
    frame, _ = _user_frame(1)
    if frame is None:
        return ""
    cell = _cell_name(frame.f_code.co_filename)
    if cell is not None:
        return f"{cell}, line {frame.f_lineno}"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _cell_name(filename: str) -> str | None:
    """IPython's name of the cell compiled as `filename`, or None outside IPython."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    name = getattr(getattr(shell, "compile", None), "format_code_name", None)
    try:
        named = name(filename) if name is not None else None
    except Exception:  # another IPython's compiler: the file's own name will do
        return None
    return f"{named[0]} {named[1]}" if named else None


F = TypeVar("F", bound=Callable)


def _users_frames(tb: TracebackType | None) -> TracebackType | None:
    """`tb` without the frames of schedlang's own files (a user's callback stays in it)."""
    kept = []
    while tb is not None:
        if not _is_internal(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    pruned = None
    for entry in reversed(kept):
        pruned = TracebackType(pruned, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return pruned


_LIBRARY_DIRS = tuple(
    os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "purelib", "platlib")
)


def _raised_by_schedlang(tb: TracebackType | None) -> bool:
    """Whether the innermost frame of `tb` that is not a library's (numpy, islpy, llvmlite,
    the standard library) is schedlang's own: then the error is ours, not a user's callback's."""
    frames = []
    while tb is not None:
        frames.append(os.path.abspath(tb.tb_frame.f_code.co_filename))
        tb = tb.tb_next
    for filename in reversed(frames):
        if _is_internal(filename):
            return True
        if not filename.startswith(_LIBRARY_DIRS):
            return False
    return False


def _bad_arguments(error: Exception) -> bool:
    """A call that Python refused before the function ran (an unknown keyword, a missing
    argument): the caller's mistake, raised from the entry point's own frame."""
    tb = error.__traceback__
    return isinstance(error, TypeError) and tb is not None and tb.tb_next is None


def _internal(function: Callable, error: Exception) -> InternalError:
    return InternalError(
        f"{function.__qualname__} failed inside schedlang: {type(error).__name__}: {error}. "
        "This is a bug in schedlang, not a mistake of yours: please report it with the "
        "algorithm and schedule that raised it"
    )


# Python's stack depth inside schedlang's entry points. The algorithm's expressions, the
# loop nests of long chains of stages and isl's ASTs of them are trees that schedlang's
# passes walk recursively, a few frames per level: 1000 frames (Python's default) ended a
# 400-term sum or a chain of 600 stages. Where a walk recurses through C (a generator fed to
# tuple(), any(), sum()), each frame also takes C stack, about 250 bytes: 40 000 frames ran
# past the main thread's 8 MiB and crashed the process (a 20 000-term sum), 16 000 stay
# within half of it. Deeper algorithms get an `AlgorithmError` (`_too_deep`).
DEEP_RECURSION = 16_000
_deep_lock = threading.Lock()
_deep_here = threading.local()  # .inside: this thread is in a `deep_recursion` block
_deep_callers = 0  # threads inside such a block
_outside_limit = 0  # the limit to restore when the last one leaves


class deep_recursion:  # noqa: N801 (used as a function: ``with deep_recursion():``)
    """Python's recursion limit at least `DEEP_RECURSION` in the block, restored when the last
    thread in such a block leaves it. A class, not a generator: an exception passing through
    it gets no frame of its own (`entry_point` trims tracebacks to the user's frames)."""

    __slots__ = ("outermost",)

    def __enter__(self) -> None:
        global _deep_callers, _outside_limit
        self.outermost = not getattr(_deep_here, "inside", False)
        if not self.outermost:
            return
        _deep_here.inside = True
        with _deep_lock:
            if _deep_callers == 0:
                _outside_limit = sys.getrecursionlimit()
                sys.setrecursionlimit(max(_outside_limit, DEEP_RECURSION))
            _deep_callers += 1

    def __exit__(self, kind, value, tb) -> bool:
        global _deep_callers
        if self.outermost:
            _deep_here.inside = False
            with _deep_lock:
                _deep_callers -= 1
                if _deep_callers == 0:
                    sys.setrecursionlimit(_outside_limit)
        return False


def _too_deep(function) -> AlgorithmError:
    return AlgorithmError(
        f"{function.__name__}: the algorithm is deeper than schedlang walks (more than "
        f"{DEEP_RECURSION} frames: an expression of thousands of terms, or a chain of "
        "thousands of stages inlined into one); compute parts of the expression as stages of "
        "their own (sl.compute), or write a long sum with a reduce axis (sl.sum)"
    )


def entry_point(
    function: F | None = None, *, also: tuple[type[Exception], ...] = (), deep: bool = True
):
    """Mark a function users call: a `SchedlangError` other than `InternalError` (and the types
    in `also`, e.g. the `TypeError`/`ValueError` of a kernel call's arguments) leaves it with a
    traceback of the user's frames alone, so that it ends at the line that made the mistake
    (JAX's ``api_boundary``). The exception, its message and its cause are unchanged.

    Inside it Python may recurse `DEEP_RECURSION` frames deep (`deep_recursion`); a kernel's
    call, which walks no tree and must cost microseconds, passes ``deep=False``.

    Any other exception raised by schedlang's own code (an `islpy.Error`, an LLVM error, a
    Python `KeyError`...) leaves as an `InternalError` that says so, caused by the original:
    no raw library error reaches a user. One raised by a user's callback passes unchanged."""

    def mark(function: F) -> F:
        @functools.wraps(function)
        def entered(*args, **kwargs):
            with deep_recursion() if deep else contextlib.nullcontext():
                try:
                    return function(*args, **kwargs)
                except (SchedlangError, *also) as error:
                    full = os.environ.get("SCHEDLANG_TRACEBACK", "").lower() == "full"
                    if not full and not isinstance(error, InternalError):
                        error.with_traceback(_users_frames(error.__traceback__))
                    raise  # a bare raise adds no frame of its own
                except MemoryError:
                    raise
                except RecursionError as error:
                    if not deep or not _raised_by_schedlang(error.__traceback__):
                        raise
                    raise _too_deep(function) from None
                except Exception as error:
                    if _bad_arguments(error) or not _raised_by_schedlang(error.__traceback__):
                        raise
                    raise _internal(function, error) from error

        return entered  # type: ignore[return-value]

    return mark if function is None else mark(function)
