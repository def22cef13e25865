"""The `gpu` fixture: CUDA tests run where a GPU and driver are usable and skip elsewhere."""

from __future__ import annotations

import pytest

from schedlang.platform_info import cuda_available, probe_cuda


@pytest.fixture
def gpu() -> None:
    if not cuda_available():
        pytest.skip(f"no usable CUDA GPU here: {probe_cuda().detail}")


@pytest.fixture
def all_dynamic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels built in the test keep all their shared memory dynamic, as those above 48 KB do
    (the compile caches are left out for the test, since they do not know the limit)."""
    from schedlang.codegen.nvptx import compile as nvptx_compile
    from schedlang.codegen.nvptx import shared_layout

    monkeypatch.setattr(shared_layout, "STATIC_SHARED_LIMIT", 0)
    monkeypatch.setattr(nvptx_compile, "_memory", {})
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", "off")  # nor does the disk cache of builds
