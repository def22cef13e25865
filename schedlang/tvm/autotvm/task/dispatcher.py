"""AutoTVM's dispatch context: which configuration a TOPI template runs with for a workload.

Without a tuning log for TOPI's workloads, the root context gives each (target, workload) a
`FallbackConfigEntity`, made once and kept, so that a compute and its schedule read the same
configuration, as AutoTVM's ``FallbackContext`` does.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod

from .space import FallbackConfigEntity

logger = logging.getLogger("autotvm")


class DispatchContext(ABC):
    """The context templates ask for their configuration; ``DispatchContext.current``."""

    current: DispatchContext

    @abstractmethod
    def query(self, target, workload) -> FallbackConfigEntity:
        """The configuration of `workload` on `target`."""


class FallbackContext(DispatchContext):
    """The root context: a fallback configuration per target and workload, made once."""

    def __init__(self) -> None:
        self.memory: dict[tuple, FallbackConfigEntity] = {}

    def query(self, target, workload) -> FallbackConfigEntity:
        key = (str(target), workload)
        if key not in self.memory:
            logger.debug(
                "Cannot find config for target=%s, workload=%s: a fallback configuration is used",
                target,
                workload,
            )
            self.memory[key] = FallbackConfigEntity()
        return self.memory[key]

    def clear_cache(self, target, workload) -> None:
        self.memory.pop((str(target), workload), None)

    def update(self, target, workload, cfg) -> None:
        self.memory[(str(target), workload)] = cfg


DispatchContext.current = FallbackContext()


def clear_fallback_cache(target, workload) -> None:
    """Forget the fallback configuration of `workload` on `target`."""
    DispatchContext.current.clear_cache(target, workload)
