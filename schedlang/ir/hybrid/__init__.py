"""Hybrid scripts (TE's ``te.hybrid``): Python loops over tensors, compiled as a stage of
their own (`nodes`, `parse`), and run as Python on arrays for the reference (`runtime`)."""

from .nodes import HybridOp
from .runtime import HYBRID_GLOBALS
from .script import HybridFunction, script

__all__ = ["HYBRID_GLOBALS", "HybridFunction", "HybridOp", "script"]
