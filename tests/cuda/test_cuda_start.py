"""CUDA started on a thread beside the first build (`runtime.cuda.start`): once per process,
silent on its thread whatever fails, and on a GPU the device initialised and the driver's PTX
compiler loaded by the time the first kernel loads."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from examples import gpu_elementwise
from schedlang.errors import LaunchError, LoweringError
from schedlang.platform_info import Probe
from schedlang.runtime.cuda import driver, start

from .fake_driver import H100
from .ptxas import assemble

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def not_started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A process that has not started CUDA yet, whose driver work is recorded, not done."""
    done: list[str] = []
    monkeypatch.setattr(start, "_thread", None)
    monkeypatch.setattr(start, "probe_cuda", lambda: Probe(True, "1 GPU: 0: H100 (sm_90)"))
    monkeypatch.setattr(driver, "device", lambda: done.append("device") or H100)
    monkeypatch.setattr(driver, "load_module", lambda ptx, what: done.append(ptx))
    return done


def test_starts_one_thread_per_process(not_started, monkeypatch):
    release, runs = threading.Event(), []
    monkeypatch.setattr(start, "_start", lambda: runs.append(1) or release.wait(10))
    start.start()
    first = start._thread
    start.start()
    assert start._thread is first
    release.set()
    first.join(10)
    assert runs == [1] and not first.is_alive()


def test_initialises_the_device_and_loads_an_empty_kernel(not_started):
    start._start()
    assert not_started[0] == "device"
    (ptx,) = not_started[1:]
    assert ".target sm_90" in ptx and ".version 8.0" in ptx
    assemble(ptx)  # fails the test if ptxas rejects it; skips where ptxas is missing


def test_without_a_gpu_it_touches_nothing(not_started, monkeypatch):
    monkeypatch.setattr(start, "probe_cuda", lambda: Probe(False, "no GPU"))
    start._start()
    assert not_started == []


@pytest.mark.parametrize("failing", ["probe_cuda", "device"])
def test_failures_stay_on_the_thread(not_started, monkeypatch, failing):
    def fail():
        raise LaunchError("cuInit (is there a GPU?): CUDA_ERROR_NO_DEVICE")

    owner = start if failing == "probe_cuda" else driver
    monkeypatch.setattr(owner, failing, fail)
    start._start()  # returns: the caller's own first call reports the error
    assert not_started == []


def test_a_cuda_build_starts_cuda_and_a_bad_architecture_does_not(monkeypatch):
    starts: list[int] = []
    monkeypatch.setattr(start, "start", lambda: starts.append(1))
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", "off")  # a build that lowers and compiles
    kernel = gpu_elementwise.build(1000, target="cuda -arch=sm_90")
    assert "sm_90" in kernel.ptx and starts == [1]
    with pytest.raises(LoweringError, match="unknown CUDA architecture 'hopper'"):
        gpu_elementwise.build(1000, target="cuda -arch=hopper")
    assert starts == [1]


def test_a_build_found_on_disk_does_not_start_cuda(monkeypatch, tmp_path):
    starts: list[int] = []
    monkeypatch.setattr(start, "start", lambda: starts.append(1))
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    first = gpu_elementwise.build(1000, target="cuda -arch=sm_90")
    assert starts == [1]
    again = gpu_elementwise.build(1000, target="cuda -arch=sm_90")
    assert starts == [1] and again.ptx == first.ptx


FRESH_PROCESS = """
import numpy as np
from examples import gpu_elementwise
from schedlang.runtime.cuda import driver, start

kernel = gpu_elementwise.build(1001)
start._thread.join(60)
assert driver._found is not None, "the device is not initialised"
assert len(driver._modules) == 1, "the empty kernel is not loaded"
rng = np.random.default_rng(3)
a, b = (rng.standard_normal(1001, dtype=np.float32) for _ in range(2))
c = np.full(1001, np.nan, np.float32)
kernel(a, b, c)
np.testing.assert_array_equal(c, a + b)
print("ok")
"""


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_a_fresh_process_finds_cuda_started_when_its_first_kernel_loads():
    completed = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "ok"
