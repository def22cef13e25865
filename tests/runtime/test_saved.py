"""Saved kernels: ``kernel.export(path)`` and ``sl.load(path)`` in a process that never saw the
algorithm, on the CPU and (simulated, and on a GPU where there is one) for CUDA."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen import disk_cache, sealed
from schedlang.runtime import saved


def _affine():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 2.0 + 1.0, name="C")
    return a, c


def test_a_cpu_kernel_loads_in_a_process_that_never_saw_its_algorithm(tmp_path):
    a, c = _affine()
    path = tmp_path / "affine.sl"
    sl.build(sl.create_schedule(c), [a, c]).export(path)
    script = textwrap.dedent(
        f"""
        import numpy as np, schedlang as sl
        kernel = sl.load({str(path)!r})
        x = np.arange(7, dtype=np.float32)
        out = np.full(7, np.nan, np.float32)
        kernel(x, out)
        assert (out == 2 * x + 1).all(), out
        assert (kernel(x) == 2 * x + 1).all()
        print(kernel)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "<Kernel main(A: float32[1d], C: float32[1d]) target=cpu>" in done.stdout


def test_a_cuda_kernel_saves_its_ptx_and_plan(tmp_path):
    a, c = _affine()
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(bx, "blockIdx.x")
    s[c].bind(tx, "threadIdx.x")
    kernel = sl.build(s, [a, c], target="cuda")
    path = tmp_path / "affine.sl"
    kernel.export(path)
    loaded = sl.load(path)
    assert loaded.ptx == kernel.ptx and loaded.target == kernel.target
    x = np.arange(50, dtype=np.float32)
    out = np.full(50, np.nan, np.float32)
    loaded.simulate(x, out)
    np.testing.assert_array_equal(out, 2 * x + 1)
    if sl.cuda_available():
        out[:] = np.nan
        loaded(x, out)
        np.testing.assert_array_equal(out, 2 * x + 1)


NOT_SAVED = [b"not a pickle", b"\x80\x05K\x01.", disk_cache.pack(b"an object", "entry.o")]


@pytest.mark.parametrize("content", NOT_SAVED, ids=["garbage", "bare-pickle", "cache-entry"])
def test_a_file_that_is_not_a_saved_kernel_is_one_clear_error(tmp_path, content):
    path = tmp_path / "bad.sl"
    path.write_bytes(content)
    with pytest.raises(sl.LaunchError, match=f"{path} is not a kernel saved by schedlang"):
        sl.load(path)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> bytes:
    """A CPU kernel's file as kernel.export writes it."""
    a, c = _affine()
    path = tmp_path_factory.mktemp("saved") / "affine.sl"
    sl.build(sl.create_schedule(c), [a, c]).export(path)
    return path.read_bytes()


def _damaged_offsets(data: bytes) -> list[int]:
    """Offsets in every region of a saved file: each byte of the header and the name's length,
    the pickle's start, the machine code (the ELF object), the LLVM IR text and the lowered
    function's names, and evenly spaced ones through the rest, to the last byte."""
    regions = [data.index(b"\x7fELF"), data.index(b"define"), data.index(b"main"), 54]
    near = [at + k for at in regions for k in range(0, 64, 7)]
    spread = range(0, len(data), max(1, len(data) // 150))
    return sorted({*range(58), *near, *spread, len(data) - 1})


def test_a_damaged_saved_file_is_a_launch_error_before_anything_runs(tmp_path, exported):
    """Each damaged copy (a flipped byte, a cut) is loaded in one child process: before files
    were checked, some of them ran damaged machine code (SIGILL, a crash, a hang)."""
    damaged = {}
    for at in _damaged_offsets(exported):
        flipped = bytes([exported[at] ^ 0x5A])
        damaged[f"flip{at}"] = exported[:at] + flipped + exported[at + 1 :]
    for size in (0, 3, 8, 12, 20, 51, 52, 54, 60, len(exported) // 2, len(exported) - 1):
        damaged[f"cut{size}"] = exported[:size]
    for name, data in damaged.items():
        (tmp_path / f"{name}.sl").write_bytes(data)
    script = textwrap.dedent(
        f"""
        import json, pathlib, schedlang as sl
        found = {{}}
        for path in sorted(pathlib.Path({str(tmp_path)!r}).glob("*.sl")):
            try:
                sl.load(path)
                found[path.stem] = "loaded"
            except sl.LaunchError as error:
                found[path.stem] = str(error)
        print(json.dumps(found))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert sorted(found) == sorted(damaged)
    for name, message in found.items():
        assert message.startswith(str(tmp_path / f"{name}.sl")), (name, message)
        words = "cut short" if name.startswith("cut") else "damaged|cut short|another version"
        if name in ("cut0", "cut3") or name.startswith("flip") and int(name[4:]) < 8:
            words += "|is not a kernel saved by schedlang"
        assert re.search(words, message), (name, message)


def test_each_kind_of_damage_has_its_message(tmp_path, exported):
    path = tmp_path / "k.sl"
    path.write_bytes(exported[:-10])
    with pytest.raises(sl.LaunchError, match=r"k.sl is cut short: .* export the kernel again"):
        sl.load(path)
    path.write_bytes(exported[:-10] + bytes(x ^ 1 for x in exported[-10:]))
    with pytest.raises(sl.LaunchError, match="k.sl is damaged: its checksum does not match"):
        sl.load(path)
    path.write_bytes(exported + b"\n")
    with pytest.raises(sl.LaunchError, match="k.sl is damaged"):
        sl.load(path)
    path.write_bytes(sealed.seal(saved.MARK, 2, "", exported[52:]))
    with pytest.raises(
        sl.LaunchError, match=r"k.sl is a kernel saved by another version of schedlang \(format 2"
    ):
        sl.load(path)
    path.write_bytes(sealed.seal(saved.MARK, saved.VERSION, "", pickle.dumps([1, 2])))
    with pytest.raises(sl.LaunchError, match="k.sl is not a kernel saved by schedlang"):
        sl.load(path)
    with pytest.raises(sl.LaunchError, match="cannot read the saved kernel .*absent.sl"):
        sl.load(tmp_path / "absent.sl")


def test_an_intact_file_still_loads_after_the_checks(tmp_path, exported):
    path = tmp_path / "k.sl"
    path.write_bytes(exported)
    x = np.random.default_rng(1).standard_normal(13).astype(np.float32)
    a, c = _affine()
    np.testing.assert_allclose(sl.load(path)(x), sl.reference(c, {a: x}), rtol=1e-6)
