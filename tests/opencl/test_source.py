"""OpenCL source, written with no device and no pyopencl: TVM's intrin_math tutorial prints
it, and what OpenCL cannot express is refused by name."""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.opencl.source import opencl_program
from schedlang.platform_info import OPENCL_INSTALL
from schedlang.runtime.opencl import device
from schedlang.runtime.opencl import kernel as opencl_kernel
from schedlang.tvm import te
from tests.cuda import kernels
from tests.cuda.test_async_copy import staged
from tests.cuda.test_tensor_cores import SMALL, _built
from tests.schedule.test_gpu_schedules import bind, gemm_shared_local, matmul


def test_te_intrin_math_tutorial_prints_its_opencl_source():
    from schedlang import tvm

    n = te.var("n")
    a = te.placeholder((n,), name="A")
    b = te.compute(a.shape, lambda i: te.exp(a[i]), name="B")
    s = te.create_schedule(b.op)
    bx, tx = s[b].split(b.op.axis[0], factor=64)
    s[b].bind(bx, te.thread_axis("blockIdx.x"))
    s[b].bind(tx, te.thread_axis("threadIdx.x"))
    fopencl = tvm.build(s, [a, b], "opencl", name="myexp")
    source = fopencl.imported_modules[0].get_source()
    assert fopencl.imported_modules[0].type_key == "opencl"
    assert "__kernel __attribute__((reqd_work_group_size(64, 1, 1)))" in source
    assert "void myexp_kernel0(__global float* restrict A, __global float* restrict B, int n)" in (
        source
    )
    assert "int i_outer = (int)get_group_id(0);" in source
    assert "int i_inner = (int)get_local_id(0);" in source
    assert "B[(64 * i_outer) + i_inner] = exp(A[(64 * i_outer) + i_inner]);" in source
    target = tvm.target.Target("opencl")
    assert (target.max_num_threads, target.thread_warp_size) == (256, 1)
    assert target.keys == ("opencl", "gpu")


def test_source_is_indented_two_spaces_a_block():
    s, inputs, outputs = kernels.gemm_shared()
    source = sl.build(s, inputs + outputs, target="opencl").source
    level = 0
    for line in source.splitlines():
        if line.lstrip().startswith("}"):
            level -= 1
        if line:
            assert len(line) - len(line.lstrip(" ")) == 2 * level, line
        if line.endswith("{"):
            level += 1
    assert level == 0
    assert re.search(r"\n  for \(int k_outer = 0; k_outer < 3; \+\+k_outer\) \{\n", source)
    assert "\n  float C_local[4];\n" in source


def test_options_change_the_program():
    s, inputs, outputs = kernels.vector_add()
    plain = sl.build(s, inputs + outputs, target="opencl").source
    separate = sl.build(s, inputs + outputs, target="opencl -fp-contract=off")
    assert "FP_CONTRACT" not in plain and "cl_khr_fp64" not in plain
    assert separate.source.startswith("#pragma OPENCL FP_CONTRACT OFF")
    assert separate.target == "opencl -fp-contract=off"
    with pytest.raises(sl.LoweringError, match="the opencl target takes -fp-contract=on|off only"):
        sl.build(s, inputs + outputs, target="opencl -arch=sm_90")


def test_a_call_without_an_opencl_device_says_what_to_install(monkeypatch):
    s, inputs, outputs = kernels.vector_add(n=8)
    kernel = sl.build(s, inputs + outputs, target="opencl")
    missing = (None, f"no pyopencl (No module named 'pyopencl'); {OPENCL_INSTALL}")
    monkeypatch.setattr(device, "opencl_choice", lambda: missing)
    uncached = functools.cache(device.opencl_device.__wrapped__)  # the process's stays as it is
    monkeypatch.setattr(opencl_kernel, "opencl_device", uncached)
    x = np.ones(8, "float32")
    with pytest.raises(sl.LaunchError, match=r"cannot run .* pip install 'schedlang\[opencl\]'"):
        kernel(x, x, np.empty(8, "float32"))


class _FakeOpenCL:
    """pyopencl with two CPU devices: `refusing`'s compiler builds nothing, as pocl's on a
    processor its LLVM does not know."""

    class Error(Exception):
        pass

    device_type = SimpleNamespace(GPU=4)

    def __init__(self, refusing: bool) -> None:
        platform = SimpleNamespace(name="pocl ")
        self.devices = [
            SimpleNamespace(name=f"cpu{k} ", type=2, platform=platform) for k in range(2)
        ]
        self.refusing = self.devices[0] if refusing else None

    def get_platforms(self):
        return [SimpleNamespace(get_devices=lambda: self.devices)]

    def Context(self, devices):  # noqa: N802 - pyopencl's name
        return devices[0]

    def Program(self, context, source):  # noqa: N802 - pyopencl's name
        fake = self

        class Program:
            def build(self):
                if context is fake.refusing:
                    raise fake.Error("build failed\n\nerror: unknown target CPU 'generic'\n")

        return Program()


@pytest.mark.parametrize("refusing", [False, True])
def test_a_device_whose_compiler_builds_nothing_is_passed_over(monkeypatch, refusing):
    from schedlang import platform_info

    fake = _FakeOpenCL(refusing)
    monkeypatch.setitem(sys.modules, "pyopencl", fake)
    chosen, name = platform_info.opencl_choice.__wrapped__()
    assert chosen is fake.devices[1 if refusing else 0]
    assert name == ("cpu1 (pocl)" if refusing else "cpu0 (pocl)")


def test_no_device_that_builds_is_no_device_with_the_compilers_reasons(monkeypatch):
    from schedlang import platform_info

    fake = _FakeOpenCL(refusing=True)
    fake.devices = fake.devices[:1]
    monkeypatch.setitem(sys.modules, "pyopencl", fake)
    chosen, why = platform_info.opencl_choice.__wrapped__()
    assert chosen is None
    assert why == "cpu0 (pocl) cannot build a program: error: unknown target CPU 'generic'"


def test_tensor_cores_are_refused_at_their_tensorize():
    with pytest.raises(sl.LoweringError, match="tensor-core instructions are CUDA's, the opencl"):
        _built((64, 64, 64), "float16", "float32", SMALL, target="opencl")


def test_an_asynchronous_pipeline_is_refused_at_its_primitive():
    a, b, c = matmul(32, 32, 16)
    s = sl.create_schedule(c)
    aa, _, _ = gemm_shared_local(s, a, b, c, tile=8, threads=4, kf=4)
    s[aa].pipeline(2)
    with pytest.raises(sl.LoweringError, match=r"pipeline\(stages=2\).*the opencl target has none"):
        sl.build(s, [a, b, c], target="opencl")


def test_asynchronous_copies_in_a_loop_nest_are_refused_by_name():
    with pytest.raises(
        sl.LoweringError, match=r"'A.shared\[.*' is an asynchronous copy .* target='cuda'"
    ):
        opencl_program(staged())


def test_eight_bit_floats_are_refused():
    a = sl.placeholder((32,), "float8_e4m3fn", name="A")
    b = sl.compute((32,), lambda i: a[i].astype("float32") * 2.0, name="B")
    s = sl.create_schedule(b)
    xo, xi = s[b].split(b.op.axis[0], factor=8)
    bind(s, b, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    with pytest.raises(
        sl.LoweringError,
        match=r"'B\[.*' is a computation with float8_e4m3fn values \(an 8-bit float\)",
    ):
        sl.build(s, [a, b], target="opencl")


def test_a_parallel_loop_is_refused_with_what_to_bind_instead():
    a = sl.placeholder((64,), name="A")
    b = sl.compute((64,), lambda i: a[i] + 1.0, name="B")
    s = sl.create_schedule(b)
    xo, xi = s[b].split(b.op.axis[0], factor=8)
    bind(s, b, (xo, "blockIdx.x"))
    s[b].parallel(xi)
    with pytest.raises(sl.LoweringError, match="marked parallel, .* on opencl bind it"):
        sl.build(s, [a, b], target="opencl")


def test_a_block_of_too_many_threads_is_refused_in_opencl_terms_too():
    a = sl.placeholder((4096,), name="A")
    b = sl.compute((4096,), lambda i: a[i] * 2.0, name="B")
    s = sl.create_schedule(b)
    bx, tx = s[b].split(b.op.axis[0], factor=2048)
    bind(s, b, (bx, "blockIdx.x"), (tx, "threadIdx.x"))
    with pytest.raises(sl.LoweringError, match=r"at most 1024 .* an OpenCL GPU's work-group"):
        sl.build(s, [a, b], target="opencl")


def test_names_that_opencl_c_keeps_for_itself_get_a_suffix():
    a = sl.placeholder((8,), name="float4")
    b = sl.compute((8,), lambda i: a[i] + 1.0, name="exp")
    s = sl.create_schedule(b)
    bind(s, b, (b.op.axis[0], "threadIdx.x"))
    source = sl.build(s, [a, b], target="opencl").source
    assert "exp_1[i] = float4_1[i] + 1.0f;" in source


def _tiny_device(work_items: int, local_bytes: int) -> device.OpenCLDevice:
    limits = SimpleNamespace(max_work_group_size=work_items, local_mem_size=local_bytes)
    return device.OpenCLDevice(None, None, None, limits, "a tiny device")


def test_a_work_group_or_local_memory_past_the_device_is_refused_before_compiling():
    s, inputs, outputs = kernels.gemm_shared()
    kernel = sl.build(s, inputs + outputs, target="opencl")
    with pytest.raises(sl.LaunchError, match=r"work-groups of 16 work-items \(4, 4, 1\), but a"):
        kernel.kernels(_tiny_device(8, 1 << 16))
    with pytest.raises(sl.LaunchError, match="needs 256 bytes of local .* has 100"):
        kernel.kernels(_tiny_device(256, 100))


def test_source_the_opencl_compiler_refuses_is_a_launch_error_with_its_log():
    if not device.opencl_available():
        pytest.skip("no OpenCL device to compile on")
    s, inputs, outputs = kernels.vector_add(n=8)
    built = sl.build(s, inputs + outputs, target="opencl")
    broken = opencl_kernel.OpenCLKernel(
        built.lowered, replace(built.program, source="__kernel void main_kernel0(oops"), "opencl"
    )
    x = np.ones(8, "float32")
    with pytest.raises(sl.LaunchError, match="refused the program of kernel 'main'"):
        broken(x, x, np.empty(8, "float32"))
