"""What counts as a correct answer to a random schedule, and the tally of answers.

An answer is either a kernel whose results equal the reference, or an error the user can act
on: a `ScheduleError` whose message names the primitive (``In schedule for 'C': split(i, ...)
...``), an `AlgorithmError`, or a `LoweringError` that says what to do instead. Anything else
is a failure of schedlang: an `InternalError` (races and divergent barriers the interpreter
finds included), another exception type, a message that names no primitive, a rejected
primitive that changed the schedule anyway, a hang, a wrong number, or a write outside an
output.
"""

from __future__ import annotations

import re
import signal
import threading
from collections import Counter
from contextlib import contextmanager

import schedlang as sl
from schedlang.schedule.errors import LegalityError

PRIMITIVES = (
    "split",
    "tile",
    "fuse",
    "reorder",
    "unroll",
    "vectorize",
    "parallel",
    "bind",
    "compute_at",
    "compute_inline",
    "compute_root",
    "cache_read",
    "cache_write",
    "set_scope",
    "storage_align",
    "double_buffer",
    "pipeline",
    "rfactor",
    "online",
    "tensorize",
)
_NAMES_A_PRIMITIVE = re.compile(rf"^In schedule for '[^']+': ({'|'.join(PRIMITIVES)})\(")
# A dependence the schedule as a whole runs backwards (no one primitive did it) names the
# schedule: "In schedule for 'C': schedule: C[i=1] needs the value ..."
_NAMES_THE_SCHEDULE = re.compile(r"^In schedule for '[^']+': schedule(?: at [^:]+:\d+)?: ")

# tile is split, split and reorder: its message names the one that refused
_CALLS = {"tile": ("tile", "split", "reorder")}

# Findings already reported, each pinned by an xfail(strict=True) test of test_regressions.py:
# the test's name -> a pattern of the error's message. Counted as "known finding: <test>"
# instead of failing, so that the sample stays green and a campaign goes on to new findings
# instead of rediscovering these; delete an entry when its test passes (strict xfail says so).
KNOWN_FINDINGS: dict[str, re.Pattern] = {}


def known_finding(err: BaseException) -> str | None:
    """The tally key of a known finding that `err` is, or None."""
    if isinstance(err, sl.SchedlangError):
        for test, pattern in KNOWN_FINDINGS.items():
            if pattern.search(str(err)):
                return f"known finding: {test}"
    return None


class FuzzFailure(AssertionError):
    """schedlang answered a schedule wrongly."""


class Hang(FuzzFailure):
    """One example ran longer than the watchdog allows."""


# the tally keys that end a case (the others count primitives and what was drawn)
OUTCOMES = ("ran and matched", "lowering rejected", "known finding", "refused")


class Tally:
    """How many schedules ended which way, for the campaign's report; the outcomes (keys that
    are not primitives) are counted per `family` too, the family of the case being answered, so
    that a campaign shows which families reach the kernels and which are all refusals."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.family: str | None = None
        self.by_family: dict[str, Counter[str]] = {}

    def count(self, key: str) -> None:
        self.counts[key] += 1
        if self.family is not None and not key.startswith(("primitive", "family:")):
            self.by_family.setdefault(self.family, Counter())[key] += 1


def check_primitive_error(
    err: sl.ScheduleError, name: str, s: sl.Schedule, before: tuple[int, str]
) -> None:
    """A primitive's own error names it and leaves the schedule as it was (tile excepted: it
    is three primitives, and the ones before the refusal stay applied, as in TE)."""
    message = str(err)
    match = _NAMES_A_PRIMITIVE.match(message)
    if match is None or match.group(1) not in _CALLS.get(name, (name,)):
        raise FuzzFailure(f"{name} raised {type(err).__name__} without naming it: {message}")
    if name not in _CALLS and (len(s.records), s.describe()) != before:
        raise FuzzFailure(f"{name} raised {type(err).__name__} but changed the schedule:\n{s}")


def lowering_verdict(err: sl.SchedlangError) -> str:
    """The tally key of an error raised while lowering or building a schedule, or a
    FuzzFailure if the error is not one a user can act on."""
    message = str(err)
    known = known_finding(err)
    if known is not None:
        return known
    if isinstance(err, sl.InternalError):
        raise FuzzFailure(f"internal error: {type(err).__name__}: {message}") from err
    if isinstance(err, sl.ScheduleError):
        whole = isinstance(err, LegalityError) and _NAMES_THE_SCHEDULE.match(message)
        if _NAMES_A_PRIMITIVE.match(message) is None and not whole:
            raise FuzzFailure(f"{type(err).__name__} names no primitive: {message}") from err
        return f"lowering rejected: {type(err).__name__}"
    if isinstance(err, sl.AlgorithmError):
        return "lowering rejected: AlgorithmError"
    if isinstance(err, sl.LoweringError):
        if "; " not in message:  # a user's mistake comes with what to do instead
            raise FuzzFailure(f"LoweringError that says nothing to do: {message}") from err
        return "lowering rejected: LoweringError"
    raise FuzzFailure(f"unexpected {type(err).__name__}: {message}") from err


@contextmanager
def watchdog(seconds: float):
    """Raise `Hang` in the main thread if the body runs longer than `seconds` (no watchdog
    off the main thread, where signals cannot be delivered)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise Hang(f"no answer after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
