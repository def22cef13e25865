"""What the GPU loader hands the driver: a kernel's PTX, which the driver compiles, whatever the
disk cache holds; a cubin only where the tuner's compile processes offered one. (ptxas's cubins
of some kernels computed wrong outputs where the driver's compilation of the same PTX was right:
benchmarks/NOTES.md.)"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from schedlang.codegen.nvptx import assemble
from schedlang.runtime.cuda import driver

from . import fake_driver


@pytest.fixture
def loaded(monkeypatch, tmp_path) -> list[bytes]:
    """The images `cuModuleLoadData` is given (their first bytes), with the disk cache on and
    ptxas refusing to run."""
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    images: list[bytes] = []

    def load(address):
        images.append(ctypes.string_at(address))
        return (fake_driver.SUCCESS, "module")

    def no_ptxas(*args):
        raise AssertionError("the loader ran ptxas")

    monkeypatch.setattr(assemble, "assemble", no_ptxas)
    monkeypatch.setattr(driver, "driver", lambda: SimpleNamespace(cuModuleLoadData=load))
    monkeypatch.setattr(driver, "device", lambda: fake_driver.H100)
    return images


def test_the_driver_gets_the_ptx_with_the_disk_cache_on(loaded):
    ptx = ".version 8.0\n.target sm_90\n"
    driver._load(ptx, "kernel")
    assert loaded == [ptx.encode()]


def test_an_offered_cubin_of_the_devices_architecture_is_loaded_once(loaded):
    ptx = ".version 8.0\n.target sm_90a\n"
    driver.offer_cubin(ptx, "sm_90a", b"cubin bytes")
    driver._load(ptx, "kernel")
    driver._load(ptx, "kernel")  # offered once: the second load compiles the PTX
    assert loaded == [b"cubin bytes", ptx.encode()]


def test_an_offered_cubin_of_another_architecture_is_not(loaded):
    ptx = ".version 8.0\n.target sm_80\n"
    driver.offer_cubin(ptx, "sm_80", b"cubin bytes")
    driver._load(ptx, "kernel")
    assert loaded == [ptx.encode()]
