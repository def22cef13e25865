"""AutoTVM's ``GLOBAL_SCOPE``: whether a template runs inside a tuning measurement (TOPI's
templates then read packed weights as placeholders). schedlang tunes TOPI's templates with
their fallback configurations only, so it never is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AutotvmGlobalScope:
    in_tuning: bool = False
    silent: bool = False


GLOBAL_SCOPE = AutotvmGlobalScope()
