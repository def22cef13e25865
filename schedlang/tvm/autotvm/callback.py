"""AutoTVM's tuning callbacks. ``log_to_file`` names the log schedlang writes (JSON lines, one
trial each: schedlang's format, read back by ``apply_history_best``); ``progress_bar`` shows
schedlang's progress bar."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class log_to_file:  # noqa: N801 (AutoTVM's name)
    file_out: str
    protocol: str = "json"


@dataclass(frozen=True)
class progress_bar:  # noqa: N801 (AutoTVM's name)
    total: int | None = None
    prefix: str = ""
    si_prefix: str = "G"
