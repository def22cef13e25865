"""The command line and the platform probes behind `schedlang info` and ``target="auto"``.

CI has no GPU, so the probes are tested for consistent answers on any machine, and the GPU branch
of the CUDA probe runs against a fake driver module.
"""

from __future__ import annotations

import enum
import io
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import schedlang as sl
from schedlang import build, cli, create_schedule, platform_info
from schedlang.demo import STEPS, matmul
from schedlang.demo_cuda import GPU_STEPS
from schedlang.platform_info import Probe

REPO_ROOT = Path(__file__).resolve().parent.parent
INFO_ITEMS = (
    "python",
    "numpy",
    "islpy",
    "llvmlite",
    "LLVM",
    "NVPTX target",
    "CUDA",
    "ptxas",
    "CPU cores",
    "OpenCL",
)


def test_python_m_schedlang_info_names_every_item():
    completed = subprocess.run(
        [sys.executable, "-m", "schedlang", "info"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    items = [line.split(":", 1)[0] for line in completed.stdout.splitlines()]
    for item in INFO_ITEMS:
        assert item in items, f"{item!r} missing from:\n{completed.stdout}"


def test_info_values_are_aligned(capsys):
    assert cli.main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    value_columns = {re.match(r"[^:]+:\s+", line).end() for line in lines}
    assert len(value_columns) == 1, lines


def test_no_command_prints_help_and_fails(capsys):
    assert cli.main([]) == 2
    assert "info" in capsys.readouterr().out


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["no-such-command"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert re.fullmatch(r"schedlang \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)


def test_print_table_aligns_values():
    out = io.StringIO()
    cli.print_table([("a", "1"), ("longer", "2")], file=out)
    assert out.getvalue() == "a:      1\nlonger: 2\n"


def test_probe_package():
    numpy = platform_info.probe_package("numpy")
    assert numpy.ok and re.match(r"\d+\.\d+", numpy.detail)
    missing = platform_info.probe_package("schedlang_no_such_package")
    assert not missing.ok and missing.detail.startswith("not importable (")


def test_probe_llvm_reports_a_version():
    probe = platform_info.probe_llvm()
    assert probe.ok
    assert re.fullmatch(r"\d+\.\d+\.\d+", probe.detail)


def test_probe_nvptx_is_consistent():
    probe = platform_info.probe_nvptx()
    assert isinstance(probe, Probe) and isinstance(probe.ok, bool) and probe.detail
    if probe.ok:
        assert platform_info.NVPTX_TRIPLE in probe.detail


def test_probe_cuda_gives_devices_or_a_reason():
    ok, detail = platform_info.probe_cuda()
    if ok:
        assert re.match(r"\d+ GPUs?: 0: .+ \(sm_\d+\)", detail)
    else:
        assert re.match(r"no [\w -]+\(.+\)", detail), detail
    assert platform_info.cuda_available() == (ok and platform_info.probe_nvptx().ok)
    assert sl.cuda_available() is platform_info.cuda_available()
    assert platform_info.auto_target() == ("cuda" if platform_info.cuda_available() else "cpu")


def test_probe_cuda_without_a_driver_names_the_reason(monkeypatch):
    class DynamicLibNotFoundError(RuntimeError):
        pass

    def no_driver():
        raise DynamicLibNotFoundError('"cuda" can only be found via system search.')

    monkeypatch.setattr(platform_info, "cuda_devices", no_driver)
    ok, detail = platform_info.probe_cuda()
    assert not ok
    assert detail == 'no CUDA driver ("cuda" can only be found via system search.)'


class _CUresult(enum.Enum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NO_DEVICE = 100


def _fake_driver(count: int, init_error: _CUresult = _CUresult.CUDA_SUCCESS) -> SimpleNamespace:
    ok = _CUresult.CUDA_SUCCESS
    capability = {"major": 9, "minor": 0}
    return SimpleNamespace(
        CUresult=_CUresult,
        CUdevice_attribute=SimpleNamespace(
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR="major",
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR="minor",
        ),
        cuInit=lambda flags: (init_error,),
        cuDeviceGetCount=lambda: (ok, count),
        cuDeviceGet=lambda index: (ok, index),
        cuDeviceGetName=lambda size, dev: (ok, f"Fake GPU {dev}".encode().ljust(size, b"\0")),
        cuDeviceGetAttribute=lambda attr, dev: (ok, capability[attr]),
    )


@pytest.fixture
def fake_driver(monkeypatch):
    bindings = pytest.importorskip("cuda.bindings")

    def install(driver: SimpleNamespace) -> None:
        monkeypatch.setattr(bindings, "driver", driver, raising=False)

    return install


def test_cuda_devices_with_a_fake_driver(fake_driver):
    fake_driver(_fake_driver(count=2))
    devices = platform_info.cuda_devices()
    assert [(gpu.name, gpu.arch) for gpu in devices] == [
        ("Fake GPU 0", "sm_90"),
        ("Fake GPU 1", "sm_90"),
    ]
    assert platform_info.probe_cuda() == Probe(
        True, "2 GPUs: 0: Fake GPU 0 (sm_90), 1: Fake GPU 1 (sm_90)"
    )


def test_probe_cuda_driver_without_gpu(fake_driver):
    fake_driver(_fake_driver(count=0, init_error=_CUresult.CUDA_ERROR_NO_DEVICE))
    assert platform_info.probe_cuda() == Probe(
        False, "no GPU (the CUDA driver says cuInit: CUDA_ERROR_NO_DEVICE)"
    )
    fake_driver(_fake_driver(count=0))
    assert platform_info.probe_cuda() == Probe(False, "no GPU (the CUDA driver sees none)")


def test_probe_ptxas_agrees_with_path():
    path = shutil.which("ptxas")
    ok, detail = platform_info.probe_ptxas()
    if path is None:
        assert (ok, detail) == (False, "not on PATH")
    else:
        assert path in detail
        if ok:
            assert detail.startswith(f"{path} (")


def _write_script(folder: Path, name: str, body: str) -> None:
    script = folder / name
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


@pytest.mark.skipif(os.name != "posix", reason="uses a shell script as a stand-in ptxas")
def test_probe_ptxas_with_stand_ins(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert platform_info.probe_ptxas() == Probe(False, "not on PATH")

    release = "Cuda compilation tools, release 9.9"
    _write_script(tmp_path, "ptxas", f"echo 'ptxas: NVIDIA'; echo '{release}'")
    assert platform_info.probe_ptxas() == Probe(True, f"{tmp_path / 'ptxas'} ({release})")

    _write_script(tmp_path, "ptxas", "exit 3")
    ok, detail = platform_info.probe_ptxas()
    assert not ok and detail.startswith("not runnable:") and "3" in detail


def test_platform_report_rows():
    rows = platform_info.platform_report()
    names = [name for name, _ in rows]
    assert set(INFO_ITEMS) <= set(names)
    assert all(isinstance(value, str) and value for _, value in rows)


def test_demo_builds_checks_and_times_every_schedule(capsys):
    assert cli.main(["demo", "--quiet", "--size", "48", "--target", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "matmul 48x48x48 float32, compiled for the cpu" in out
    rows = [line for line in out.splitlines() if " yes" in line]  # a note may follow
    assert [row.split("  ")[0] for row in rows] == [step.name for step in STEPS]
    assert "numpy matmul (yardstick)" in out
    assert re.search(r"numpy: np.matmul through .+ the table shows the faster, \d BLAS thread", out)


@pytest.mark.parametrize(
    "size, message",
    [
        ("-5", "argument --size: -5 is not a matmul size; give a positive integer"),
        ("0", "argument --size: 0 is not a matmul size; give a positive integer"),
        ("big", "argument --size: 'big' is not an integer"),
    ],
)
def test_demo_size_must_be_a_positive_integer(size, message):
    completed = subprocess.run(
        [sys.executable, "-m", "schedlang", "demo", "--quiet", "--target", "cpu", "--size", size],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert message in completed.stderr and "usage: schedlang demo" in completed.stderr
    assert "Traceback" not in completed.stderr and completed.stdout == ""


def test_demo_cuda_target_without_a_gpu_fails_in_a_process():
    """The exit status a shell sees, with the driver shown no GPU (where one is present)."""
    completed = subprocess.run(
        [sys.executable, "-m", "schedlang", "demo", "--quiet", "--target", "cuda"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert completed.returncode == 2, completed.stdout
    assert "the cuda demo needs a usable GPU" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_demo_steps_are_the_tutorials():
    names = [step.name for step in STEPS]
    assert names[0] == "naive" and names[1].startswith("blocking")
    assert names[2:] == [
        "+ vectorization",
        "+ loop permutation",
        "+ array packing",
        "+ write cache",
        "+ parallel",
    ]
    assert [step.packed for step in STEPS] == [False] * 4 + [True] * 3


def test_demo_gpu_steps_are_the_tutorials():
    names = [step.name for step in GPU_STEPS]
    assert names[0].startswith("naive") and names[1].startswith("+ shared tiles")
    assert names[2].startswith("+ register tiles") and names[3].startswith("+ virtual threads")


@pytest.mark.parametrize("size", [256, 37])
def test_demo_gpu_steps_build_to_ptx_that_ptxas_accepts(size):
    """The cuda demo's schedules, without a GPU: each lowers, compiles and assembles; where
    the tiles divide the size, the register tiles stay in registers."""
    from tests.cuda.ptxas import assemble

    for step in GPU_STEPS:
        a, b, c, _ = matmul(size, size, size, packed=False)
        s = create_schedule(c)
        step.schedule(s, a, b, c)
        report = assemble(build(s, [a, b, c], target="cuda").ptx)
        if size % 64 == 0:
            assert report.spill_bytes == 0 and report.stack_bytes == 0, step.name


def test_demo_cuda_target_without_a_gpu_says_what_to_do(capsys, monkeypatch):
    monkeypatch.setattr(platform_info, "cuda_available", lambda: False)
    assert cli.main(["demo", "--quiet", "--target", "cuda"]) == 2
    err = capsys.readouterr().err
    assert "the cuda demo needs a usable GPU" in err and "--target cpu" in err


def test_demo_auto_runs_the_cpu_steps_without_a_gpu(capsys, monkeypatch):
    monkeypatch.setattr(platform_info, "cuda_available", lambda: False)
    assert cli.main(["demo", "--quiet", "--size", "16", "--target", "auto"]) == 0
    assert "compiled for the cpu" in capsys.readouterr().out


@pytest.mark.gpu
def test_demo_cuda_checks_and_times_every_gpu_step(capsys):
    if not platform_info.cuda_available():
        pytest.skip(f"no usable CUDA GPU here: {platform_info.probe_cuda().detail}")
    assert cli.main(["demo", "--quiet", "--size", "256", "--target", "cuda"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"matmul 256x256x256 float32, compiled for cuda on .+ \(sm_\d+\)", out)
    rows = [line for line in out.splitlines() if " yes" in line]  # a note may follow
    assert [row.split("  ")[0] for row in rows] == [step.name for step in GPU_STEPS]
    assert "torch matmul (cuBLAS, TF32 off; yardstick)" in out
    print(out)  # the timings, for the log of a GPU run
    assert cli.main(["demo", "--quiet", "--size", "40", "--target", "auto"]) == 0
    assert "compiled for cuda on" in capsys.readouterr().out
