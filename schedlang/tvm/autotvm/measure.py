"""AutoTVM's measure options: ``measure_option(builder, runner)``, ``LocalBuilder`` and
``LocalRunner``. schedlang builds in its own compile processes and times with its kernels'
``time``; what carries over is the number of timed runs and the number of compile processes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LocalBuilder:
    n_parallel: int | None = None
    timeout: float = 10
    build_func: str = "default"


@dataclass(frozen=True)
class LocalRunner:
    number: int = 4
    repeat: int = 3
    timeout: float = 10
    min_repeat_ms: int = 0
    cooldown_interval: float = 0.1
    enable_cpu_cache_flush: bool = False


def measure_option(builder="local", runner="local") -> dict:
    """The builder and runner a tuner uses (strings "local" for the defaults)."""
    builder = LocalBuilder() if builder == "local" else builder
    runner = LocalRunner() if runner == "local" else runner
    return {"builder": builder, "runner": runner}
