"""`GuardSpec`: what a kernel's usual call checks, as plain values: the CPU's guard compiles it
to machine code (`trampoline`), the GPU's usual call writes it out as Python
(`runtime.usual_calls`); `runtime.fast_path` works it out from a kernel."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GuardSpec:
    """What a kernel's guard checks: per parameter its dtype (whose object numpy shares between
    all its arrays), whether it is written, and per dimension ``(constant, -1)`` or ``(0, k)``
    for size ``k``; per size the largest value it may take; the largest element count an
    array may have (None: any)."""

    params: tuple[tuple[np.dtype, bool, tuple[tuple[int, int], ...]], ...]
    size_limits: tuple[int, ...]
    count_limit: int | None

    def sources(self) -> list[tuple[int, int]]:
        """For each size, the first (parameter, dimension) that shows it."""
        found: dict[int, tuple[int, int]] = {}
        for k, (_, _, dims) in enumerate(self.params):
            for d, (_, size) in enumerate(dims):
                if size >= 0 and size not in found:
                    found[size] = (k, d)
        return [found[size] for size in range(len(self.size_limits))]
