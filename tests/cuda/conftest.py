"""The `gpu` fixture: CUDA tests run where a GPU and driver are usable and skip elsewhere."""

from __future__ import annotations

import pytest

from schedlang.platform_info import cuda_available, probe_cuda


@pytest.fixture
def gpu() -> None:
    if not cuda_available():
        pytest.skip(f"no usable CUDA GPU here: {probe_cuda().detail}")
