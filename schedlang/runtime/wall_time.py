"""Host wall-clock timing of a call, for kernels timed on the CPU's clock."""

from __future__ import annotations

import time
from collections.abc import Callable


def median_seconds(run: Callable[[], object], repeat: int, warmup: int) -> float:
    """The median seconds of `repeat` calls of `run`, after `warmup` untimed ones."""
    if repeat < 1 or warmup < 0:
        raise ValueError(f"need repeat >= 1 and warmup >= 0, got {repeat} and {warmup}")
    for _ in range(warmup):
        run()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    import statistics  # a few milliseconds to import, which a kernel's build need not pay

    return statistics.median(samples)
