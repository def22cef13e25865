"""`sl.build` and `Kernel`: targets, timing, what a kernel shows, caches, failures."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.cpu import cache
from schedlang.platform_info import cuda_available


def _vadd(factor: int = 4):
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] + 1.0, name="C")
    s = sl.create_schedule(c)
    _, xi = s[c].split(c.op.axis[0], factor=factor)
    s[c].vectorize(xi)
    return s, a, c


def test_auto_and_cpu_targets_build():
    s, a, c = _vadd()
    targets = ["cpu"] if cuda_available() else ["cpu", "auto"]  # auto is cuda where it runs
    for target in targets:
        kernel = sl.build(s, [a, c], target=target)
        x = np.arange(9, dtype=np.float32)
        out = np.empty_like(x)
        kernel(x, out)
        np.testing.assert_array_equal(out, x + 1.0)


@pytest.mark.parametrize("target", ["cuda", "cuda -arch=sm_90"])
def test_a_cpu_schedule_for_cuda_says_to_bind_its_loops(target):
    s, a, c = _vadd()
    with pytest.raises(sl.LoweringError, match="bind its loops to blockIdx/threadIdx"):
        sl.build(s, [a, c], target=target)


def test_unknown_target():
    s, a, c = _vadd()
    message = "unknown target 'tpu'; use 'cpu', 'cuda', 'opencl' or 'auto'"
    with pytest.raises(sl.LoweringError, match=message):
        sl.build(s, [a, c], target="tpu")


def test_bound_loops_are_an_error_on_the_cpu():
    _, a, c = _vadd()
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(xo, sl.thread_axis("blockIdx.x"))
    s[c].bind(xi, sl.thread_axis("threadIdx.x"))
    with pytest.raises(sl.LoweringError, match=r"bound to blockIdx.x; the cpu target has no thr"):
        sl.build(s, [a, c])


def test_time_returns_the_median_seconds():
    s, a, c = _vadd()
    kernel = sl.build(s, [a, c])
    x = np.ones(1000, np.float32)
    seconds = kernel.time(x, np.empty_like(x), repeat=3, warmup=1)
    assert 0 < seconds < 1
    with pytest.raises(ValueError, match="need repeat >= 1"):
        kernel.time(x, np.empty_like(x), repeat=0)


def test_kernel_shows_its_code():
    s, a, c = _vadd(8)
    kernel = sl.build(s, [a, c], name="add_one")
    assert repr(kernel) == "<Kernel add_one(A: float32[1d], C: float32[1d]) target=cpu>"
    assert 'define i32 @"sl_add_one"' in kernel.llvm_ir
    assert "sl_add_one:" in kernel.asm
    assert "fadd" in kernel.optimized_ir
    assert kernel.lowered.name == "add_one"
    assert "for i.outer" in kernel._repr_html_()


def test_memory_cache_shares_compiled_code(monkeypatch):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", "off")  # memory, not disk
    s, a, c = _vadd(16)
    first = sl.build(s, [a, c])
    again = sl.build(s, [a, c])
    assert again._compiled is first._compiled
    cache.clear_memory_cache()
    assert sl.build(s, [a, c])._compiled is not first._compiled


def test_disk_cache_reuses_object_code(tmp_path):
    script = textwrap.dedent(
        """
        import numpy as np, schedlang as sl
        from schedlang.codegen.cpu import jit as cpu_jit
        n = sl.var("n")
        a = sl.placeholder((n,), name="A")
        c = sl.compute((n,), lambda i: a[i] * 2.0, name="C")
        compiled = []
        original = cpu_jit.object_code
        cpu_jit.object_code = lambda text: compiled.append(1) or original(text)
        kernel = sl.build(sl.create_schedule(c), [a, c])
        x = np.arange(4, dtype=np.float32); out = np.empty_like(x); kernel(x, out)
        assert (out == 2 * x).all()
        print(len(compiled))
        """
    )
    env = {"SCHEDLANG_CACHE_DIR": str(tmp_path), "PATH": ""}
    runs = [
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    # the kernel, its guard (`codegen.cpu.trampoline`) and the build's Ctrl-C handler
    # (`runtime.interrupt`)
    assert runs == ["3", "0"]
    assert len(list(tmp_path.glob("*.o"))) == 3


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool"])
def test_aligned_arrays_start_on_a_cache_line(dtype):
    from schedlang.runtime.arrays import aligned_copy, aligned_empty

    out = aligned_empty((3, 5), dtype)
    assert out.ctypes.data % 64 == 0 and out.flags.c_contiguous and out.shape == (3, 5)
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    y = aligned_copy(x)
    assert y.ctypes.data % 64 == 0 and (y == x).all()
