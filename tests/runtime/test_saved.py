"""Saved kernels: ``kernel.export(path)`` and ``sl.load(path)`` in a process that never saw the
algorithm, on the CPU and (simulated, and on a GPU where there is one) for CUDA."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import schedlang as sl


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


@pytest.mark.parametrize("content", [b"not a pickle", b""], ids=["garbage", "empty"])
def test_a_file_that_is_not_a_saved_kernel_is_one_clear_error(tmp_path, content):
    path = tmp_path / "bad.sl"
    path.write_bytes(content)
    with pytest.raises(sl.LaunchError, match="is not a kernel saved by schedlang"):
        sl.load(path)
