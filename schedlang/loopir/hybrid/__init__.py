"""A hybrid script's call as a loop-IR function of its own (`translate`), its loops as its
stage's schedule has them (`loops`)."""

from .translate import hybrid_params, lower_hybrid

__all__ = ["hybrid_params", "lower_hybrid"]
