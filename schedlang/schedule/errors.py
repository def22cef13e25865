"""`ScheduleError` subclasses, one per broken precondition, and the message format."""

from __future__ import annotations

from ..errors import ScheduleError


class AxisError(ScheduleError):
    """An axis that is not a current loop of the stage (another stage's, or split away)."""


class FactorError(ScheduleError):
    """A split factor, part count or extent that the primitive cannot use."""


class PlacementError(ScheduleError):
    """compute_at / compute_inline / compute_root on a stage where it cannot apply."""


class BindError(ScheduleError):
    """A loop bound to a hardware index in a way the hardware cannot run."""


class AnnotationError(ScheduleError):
    """unroll / vectorize / parallel that conflicts with another annotation."""


class TensorizeError(ScheduleError):
    """tensorize of loops that do not compute what the tensor instruction does (shape, access
    pattern, dtypes, scopes, a tile cut by the domain's edge)."""


class LegalityError(ScheduleError):
    """The schedule would reorder dependent computations or run them in parallel."""


def message(stage: str, call: str, loc: str, what: str) -> str:
    """`In schedule for 'C': split(i, factor=0) at x.py:14: factor must be ...`."""
    where = f" at {loc}" if loc else ""
    return f"In schedule for '{stage}': {call}{where}: {what}"


class ScopeError(ScheduleError):
    """cache_read / cache_write / set_scope / storage_align with a scope or layout that cannot
    apply."""


class RFactorError(ScheduleError):
    """rfactor of an axis or stage that cannot be factored."""


class OnlineError(ScheduleError):
    """online of a chain of reductions that rescaling does not compute exactly."""


class UnrollSizeError(ScheduleError):
    """unroll of loops whose copies would take the compiler too long
    (`loopir.loops.unroll_limit`)."""
