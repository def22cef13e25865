"""The error hierarchy. Every user-facing failure is a `SchedlangError`.

Messages are written for the person who made the mistake: they name the tensor, stage, primitive
or axis involved, point at the user's line when we know it, and end with what to do. Internal
invariants that break are `InternalError`: those are our bugs, never the user's.
"""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class SchedlangError(Exception):
    """Base of every error schedlang raises on purpose."""


class AlgorithmError(SchedlangError, ValueError):
    """The algorithm (placeholders, computes, expressions) is malformed or cannot be evaluated."""


class ScheduleError(SchedlangError, ValueError):
    """A schedule primitive got bad arguments, or the schedule is illegal for the algorithm."""


class LoweringError(SchedlangError):
    """A legal schedule asks for something the lowering or the target cannot do."""


class LaunchError(SchedlangError, RuntimeError):
    """Running a compiled kernel failed (driver error, resource limit)."""


class InternalError(SchedlangError, RuntimeError):
    """A bug in schedlang. Please report it with the code that triggered it."""


def _is_internal(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)


def user_location() -> str:
    """`file.py:LINE` of the innermost caller outside the schedlang package, or ''."""
    frame = sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return ""
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"

