"""AutoTVM's ``tvm.autotvm.tophub``: where TVM downloads TopHub's packages of configurations
tuned for other workloads, which TOPI's templates lend their fallback configurations from
(`FallbackConfigEntity.fallback_with_reference_log`). schedlang downloads nothing, as TVM does
with ``TOPHUB_LOCATION=NONE``: there is no reference log, and a template keeps its fallback."""

from __future__ import annotations


def load_reference_log(backend: str, model: str, workload_name: str) -> list:
    """The tuned records of `workload_name` for `backend` and `model`: none, since schedlang
    has no TopHub package (tune the workload with ``sl.tune`` for a configuration of its own)."""
    return []
