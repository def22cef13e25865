"""``tvm.container``: TE's containers as Python's."""

from __future__ import annotations


class Map(dict):
    """TE's map from objects to objects (what `te.schedule.InferBound` returns): a dict."""
