"""The on-disk cubin cache: off with SCHEDLANG_CACHE_DIR=off, keyed by PTX and architecture, used
by a later load in place of compiling the PTX again, compiled again when its file is damaged, and
skipped with a warning when it cannot be written."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen import disk_cache
from schedlang.runtime.cuda import cubin_cache

from . import fake_driver, kernels


def test_off_when_the_variable_says_so(monkeypatch):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", "off")
    assert cubin_cache.path_for(".version 8.0", "sm_90") is None


def test_key_has_the_ptx_and_the_architecture(monkeypatch, tmp_path):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    one = cubin_cache.path_for("ptx a", "sm_90")
    assert one == cubin_cache.path_for("ptx a", "sm_90")
    assert one != cubin_cache.path_for("ptx b", "sm_90")
    assert one != cubin_cache.path_for("ptx a", "sm_80")
    assert one.parent == tmp_path / "cuda" and one.suffix == ".cubin"


@pytest.fixture
def compiled_cubins(monkeypatch, tmp_path) -> list[str]:
    """The PTX `compile_ptx` was asked to compile; each compiles to ``cubin of <ptx>``."""
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(disk_cache, "_warned", False)
    asked: list[str] = []

    def compile_ptx(ptx):
        asked.append(ptx)
        return f"cubin of {ptx}".encode()

    monkeypatch.setattr(cubin_cache, "compile_ptx", compile_ptx)
    return asked


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda e: e[:-3], id="truncated"),
        pytest.param(lambda e: b"", id="empty"),
        pytest.param(lambda e: e[:-1] + bytes([e[-1] ^ 1]), id="flipped"),
        pytest.param(lambda e: b"cubin of ptx a", id="older-format"),
    ],
)
def test_a_damaged_cubin_is_compiled_again_and_replaced(compiled_cubins, damage):
    assert cubin_cache.cubin("ptx a", "sm_90") == b"cubin of ptx a"
    path = cubin_cache.path_for("ptx a", "sm_90")
    good = path.read_bytes()
    path.write_bytes(damage(good))
    assert cubin_cache.cubin("ptx a", "sm_90") == b"cubin of ptx a"
    assert compiled_cubins == ["ptx a", "ptx a"] and path.read_bytes() == good
    assert cubin_cache.cubin("ptx a", "sm_90") == b"cubin of ptx a"
    assert len(compiled_cubins) == 2


def test_an_unwritable_cubin_folder_warns_once_and_compiles(compiled_cubins, tmp_path):
    (tmp_path / "cuda").write_text("a file where the cubin folder goes")
    with pytest.warns(sl.SchedlangWarning, match="cannot write to .*SCHEDLANG_CACHE_DIR=off"):
        for ptx in ("ptx a", "ptx b"):
            assert cubin_cache.cubin(ptx, "sm_90") == f"cubin of {ptx}".encode()
    assert compiled_cubins == ["ptx a", "ptx b"]


def test_with_the_cache_off_the_driver_gets_the_ptx(monkeypatch, compiled_cubins):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", "off")
    assert cubin_cache.cubin("ptx a", "sm_90") is None
    assert compiled_cubins == []


def test_the_driver_loads_the_recompiled_cubin(monkeypatch, compiled_cubins):
    from schedlang.runtime.cuda import driver as driver

    loaded: list[bytes] = []
    expected = b"cubin of ptx a"

    def load(address):
        loaded.append(ctypes.string_at(address, len(expected)))
        return (fake_driver.SUCCESS, "module")

    monkeypatch.setattr(driver, "driver", lambda: SimpleNamespace(cuModuleLoadData=load))
    monkeypatch.setattr(driver, "device", lambda: fake_driver.H100)
    cubin_cache.path_for("ptx a", "sm_90").parent.mkdir()
    cubin_cache.path_for("ptx a", "sm_90").write_bytes(b"\x7fELF, cut")
    assert driver._load("ptx a", "kernel") == (fake_driver.SUCCESS, "module")
    assert loaded == [expected] and compiled_cubins == ["ptx a"]


def _vector_add_from_a_fresh_load():
    """Build vector_add, load it anew (no module kept in memory) and check a run; the path of
    its cubin."""
    from schedlang.runtime.cuda import driver as driver

    s, inputs, outputs = kernels.vector_add()
    kernel = sl.build(s, inputs + outputs, target="cuda")
    driver._modules.clear()
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal(1003, np.float32), rng.standard_normal(1003, np.float32)
    out = np.full(1003, np.nan, np.float32)
    kernel(a, b, out)
    np.testing.assert_allclose(out, sl.reference(outputs[0], dict(zip(inputs, (a, b)))))
    return cubin_cache.path_for(kernel.ptx, driver.device().arch)


@pytest.fixture
def counted_compiles(monkeypatch, gpu) -> list[int]:
    """One entry per PTX compiled to a cubin, once CUDA has started (its first load, of an empty
    kernel, is on a thread of its own that would otherwise race with the test)."""
    from schedlang.runtime.cuda import start

    start.start()
    start._thread.join(60)
    compiled: list[int] = []
    original = cubin_cache.compile_ptx

    def counted(*args):
        compiled.append(1)
        return original(*args)

    monkeypatch.setattr(cubin_cache, "compile_ptx", counted)
    return compiled


@pytest.mark.gpu
def test_kernel_runs_from_a_cached_cubin(monkeypatch, tmp_path, counted_compiles):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    path = _vector_add_from_a_fresh_load()
    assert counted_compiles == [1] and disk_cache.read(path) is not None
    assert _vector_add_from_a_fresh_load() == path
    assert counted_compiles == [1]  # loaded from the file


@pytest.mark.gpu
def test_a_corrupted_cubin_is_compiled_again_on_the_gpu(monkeypatch, tmp_path, counted_compiles):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    path = _vector_add_from_a_fresh_load()
    good = path.read_bytes()
    path.write_bytes(_flip_middle(good))
    _vector_add_from_a_fresh_load()
    assert counted_compiles == [1, 1] and disk_cache.read(path) is not None
    _vector_add_from_a_fresh_load()
    assert counted_compiles == [1, 1]  # the replaced file is used


@pytest.mark.gpu
def test_an_unwritable_cache_runs_on_the_gpu(monkeypatch, tmp_path, counted_compiles):
    blocker = tmp_path / "cache"
    blocker.write_text("a file, not a folder")
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(blocker))
    monkeypatch.setattr(disk_cache, "_warned", False)
    with pytest.warns(sl.SchedlangWarning, match="cannot write to .*SCHEDLANG_CACHE_DIR=off"):
        _vector_add_from_a_fresh_load()
    assert counted_compiles == [1] and blocker.read_text() == "a file, not a folder"


def _flip_middle(entry: bytes) -> bytes:
    start, end = len(entry) // 4, 3 * len(entry) // 4
    return entry[:start] + bytes(v ^ 0xFF for v in entry[start:end]) + entry[end:]


def test_ptxas_assembles_for_the_target_the_ptx_names(monkeypatch):
    asked: list[str] = []
    monkeypatch.setattr(cubin_cache, "assemble", lambda ptx, arch: asked.append(arch) or b"c")
    ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n"
    assert cubin_cache.compile_ptx(ptx) == b"c" and asked == ["sm_90a"]


def test_without_ptxas_nothing_is_cached_and_the_driver_gets_the_ptx(monkeypatch, tmp_path):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cubin_cache, "assemble", lambda ptx, arch: None)
    assert cubin_cache.cubin(".target sm_90\n", "sm_90") is None
    assert not (tmp_path / "cuda").exists()


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_a_pipelined_copy_runs_from_a_cached_cubin(monkeypatch, tmp_path):
    """The driver's linker made cubins of copy-engine pipelines that faulted (misaligned
    address); the cached cubin is ptxas's."""
    from schedlang.runtime.cuda import driver as driver

    from .test_bulk_copies import _copy_schedule

    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    s, args = _copy_schedule(64, (32, 16), lambda a, i, j: a[i, j] * 2, dtype="float16")
    kernel = sl.build(s, args, target="cuda")
    x = np.random.default_rng(2).uniform(1, 2, (64, 64)).astype("float16")
    for _ in range(2):  # compiled and stored, then loaded from the file
        driver._modules.clear()
        y = np.full((64, 64), np.nan, "float16")
        kernel(x, y)
        np.testing.assert_array_equal(y, x * 2)
    assert disk_cache.read(cubin_cache.path_for(kernel.ptx, driver.device().arch)) is not None
