"""Tests marked ``gpu`` skip in one place when no GPU is usable, so a run without one says why
once instead of once per file. The disk cache is off unless the run sets
``SCHEDLANG_CACHE_DIR``: tests count compiles, and a run leaves nothing in the user's cache
(set it to a folder, twice, to run every test on kernels loaded from the cache)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("SCHEDLANG_CACHE_DIR", "off")

from schedlang.platform_info import cuda_available, probe_cuda


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is not None and not cuda_available():
        pytest.skip(f"no usable CUDA GPU here: {probe_cuda().detail}")
