"""``tvm.driver``: TE's entry points for lowering and building (`build_module`)."""

from __future__ import annotations

from .build_module import build, lower, schedule_to_module

__all__ = ["build", "lower", "schedule_to_module"]
