"""The on-disk cubin cache: off without SCHEDLANG_CACHE_DIR, keyed by PTX and architecture, and
used by a later load in place of compiling the PTX again."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.runtime import cubin_cache

from . import kernels


def test_off_without_the_variable(monkeypatch):
    monkeypatch.delenv("SCHEDLANG_CACHE_DIR", raising=False)
    assert cubin_cache.path_for(".version 8.0", "sm_90") is None


def test_key_has_the_ptx_and_the_architecture(monkeypatch, tmp_path):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    one = cubin_cache.path_for("ptx a", "sm_90")
    assert one == cubin_cache.path_for("ptx a", "sm_90")
    assert one != cubin_cache.path_for("ptx b", "sm_90")
    assert one != cubin_cache.path_for("ptx a", "sm_80")
    assert one.parent == tmp_path / "cuda" and one.suffix == ".cubin"


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_kernel_runs_from_a_cached_cubin(monkeypatch, tmp_path):
    from schedlang.runtime import cuda_driver as driver

    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    s, inputs, outputs = kernels.vector_add()
    kernel = sl.build(s, inputs + outputs, target="cuda")
    a, b = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    for attempt in range(2):  # compiled and stored, then loaded from the file
        driver._modules.clear()
        if attempt:
            monkeypatch.setattr(cubin_cache, "compile_ptx", pytest.fail)
        out = np.full(1000, np.nan, np.float32)
        kernel(a, b, out)
        np.testing.assert_array_equal(out, a + b)
        assert len(list((tmp_path / "cuda").glob("*.cubin"))) == 1
