"""numpy's matmul as the cpu demo's yardstick, timed as it runs best on this machine.

numpy hands a matmul to its BLAS (OpenBLAS, MKL, ...), which starts as many threads as the
machine has cores. On a machine whose cores other work shares, the demo's own among it, those
threads wait on each other: a 512^3 matmul took 26 ms at the default two threads and 3.9 ms at
one. So the yardstick is timed both ways, in the same interleaved rounds as the schedules, with
the thread count set through threadpoolctl outside the timed call, and the faster one stands
for numpy, with a note of which it was.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

YARDSTICK = "numpy matmul (yardstick)"


@dataclass(frozen=True)
class Setting:
    """One way to run numpy's matmul: `threads` BLAS threads (None: the BLAS's default),
    named in the table by `label`."""

    label: str
    threads: int | None

    def limit(self, controller) -> Callable[[], AbstractContextManager]:
        if self.threads is None:
            return nullcontext
        return lambda: controller.limit(limits=self.threads, user_api="blas")


@dataclass(frozen=True)
class Yardstick:
    """The settings to time (a key of the timing rounds each) and what to say of them."""

    settings: dict[str, Setting]
    blas: str  # the BLAS's name and default thread count, for the line under the table
    setups: dict[str, Callable[[], AbstractContextManager]]


def yardstick() -> Yardstick:
    """numpy's matmul at the BLAS's default thread count and, where that is more than one, at
    one thread."""
    from threadpoolctl import ThreadpoolController

    controller = ThreadpoolController()
    blas = controller.select(user_api="blas")
    libraries = sorted({info["internal_api"] for info in blas.info()}) or ["numpy's own"]
    default = max((info["num_threads"] for info in blas.info()), default=1)
    plural = "s" if default != 1 else ""
    settings = {f"{YARDSTICK} default": Setting(f"{default} BLAS thread{plural}", None)}
    if default > 1:
        settings[f"{YARDSTICK} 1 thread"] = Setting("1 BLAS thread", 1)
    setups = {key: setting.limit(controller) for key, setting in settings.items()}
    return Yardstick(settings, f"{', '.join(libraries)} (default {default} thread{plural})", setups)


def faster(stick: Yardstick, samples: dict[str, list[float]]) -> tuple[str, str, str]:
    """The key of the faster setting, the note of its row (what it was, and the other's time),
    and the line that says how numpy was timed."""
    keys = list(stick.settings)
    best = min(keys, key=lambda k: float(np.median(samples[k])))
    others = [
        f"{stick.settings[k].label}: {float(np.median(samples[k])) * 1e3:.3f} ms"
        for k in keys
        if k != best
    ]
    note = "; ".join([stick.settings[best].label] + others)
    ways = " and at ".join(stick.settings[k].label for k in keys)
    line = (
        f"numpy: np.matmul through {stick.blas}, timed at {ways} (threadpoolctl) in the same "
        f"rounds; the table shows the faster, {stick.settings[best].label}"
    )
    return best, note, line
