"""Kernel splitting, launch shapes and the CUDA target's errors: all without a GPU."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.nvptx import compile as nvptx_compile
from schedlang.codegen.nvptx import libdevice
from schedlang.codegen.nvptx.plan import HostLoop, plan_kernels
from schedlang.codegen.nvptx.shared_layout import lay_out_shared
from schedlang.ir.expr import const
from schedlang.loopir.core.nodes import Allocate, Barrier, Buffer, For, LoweredFunc, seq
from schedlang.loopir.core.visit import walk_stmt
from schedlang.platform_info import cuda_available
from schedlang.runtime.cuda.launch import check_block, check_grid, grid_of
from schedlang.runtime.dlpack import exporter
from tests.loopir.nests import load, loop_var, store
from tests.schedule.test_gpu_schedules import bind

from .fake_driver import H100
from .kernels import gemm_shared, math, two_kernels, vector_add

F32 = "float32"


def lowered(make, *args) -> LoweredFunc:
    s, inputs, outputs = make(*args)
    return sl.lower(s, inputs + outputs)


def bound(name: str, tag: str, extent, body) -> For:
    return For(loop_var(name), const(0), extent, "bound", body, tag)


def test_grid_and_block_come_from_the_bound_loops():
    plan = plan_kernels(lowered(gemm_shared))
    (kernel,) = plan.kernels
    assert kernel.block == (4, 4, 1)
    assert kernel.shared_bytes == 2 * 8 * 4 * 4
    assert grid_of(kernel, plan, [13, 10]) == (2, 2, 1)  # sizes m, n in the function's order
    assert grid_of(kernel, plan, [0, 10]) == (2, 0, 1)  # an empty grid: the launch is skipped


def test_the_loops_the_grid_covers_exactly_are_not_guarded():
    """The launch runs one block per iteration of the loop bound to blockIdx.x, so comparing
    blockIdx.x with its extent could never fail: the code generator skips that guard for the
    loops the plan lists, which must be the loops of the body it generates."""
    plan = plan_kernels(lowered(vector_add))
    (kernel,) = plan.kernels
    blocks = [s for s in walk_stmt(kernel.body) if isinstance(s, For) and s.thread == "blockIdx.x"]
    assert blocks and all(id(loop) in kernel.grid_loops for loop in blocks)


def test_top_level_statements_become_kernels_around_temporaries():
    plan = plan_kernels(lowered(two_kernels))
    assert [k.name for k in plan.kernels] == ["main_kernel0", "main_kernel1"]
    assert [b.name for b in plan.temps] == ["B"]
    assert [b.name for b in plan.buffers] == ["A", "C", "B"]


def test_thread_loops_without_block_loops_are_one_block():
    """Everything is one kernel, so a shared buffer and its barrier span all statements."""
    n, x = Buffer("X", (const(8),), F32), Buffer("S", (const(8),), F32, "shared")
    out = Buffer("Y", (const(8),), F32)
    tx1, tx2 = loop_var("tx"), loop_var("tx2")
    fill = For(tx1, const(0), const(8), "bound", store(x, (tx1,), load(n, tx1)), "threadIdx.x")
    use = For(tx2, const(0), const(8), "bound", store(out, (tx2,), load(x, 7 - tx2)), "threadIdx.x")
    func = LoweredFunc("flip", (n, out), (), Allocate(x, seq(fill, Barrier(), use)))
    (kernel,) = plan_kernels(func).kernels
    assert kernel.block == (8, 1, 1) and kernel.shared_bytes == 32
    assert [int(e.value) for e in kernel.grid] == [1, 1, 1]


def test_uniform_stores_are_narrowed_to_one_thread():
    """A read-modify-write outside the thread loops runs on thread 0 (several warps would
    add the partial sums more than once); a local store stays with every thread."""
    x, y = Buffer("X", (const(8),), F32), Buffer("Y", (const(1),), F32)
    part = Buffer("P", (const(8),), F32, "shared")
    mine = Buffer("L", (const(1),), F32, "local")
    tx, k = loop_var("tx"), loop_var("k")
    fill = For(tx, const(0), const(8), "bound", store(part, (tx,), load(x, tx)), "threadIdx.x")
    total = seq(
        store(y, (0,), const(0.0, F32)),
        For(k, const(0), const(8), "serial", store(y, (0,), load(y, 0) + load(part, k))),
    )
    body = Allocate(
        part, Allocate(mine, seq(fill, Barrier(), store(mine, (0,), const(1.0, F32)), total))
    )
    func = LoweredFunc("k", (x, y), (), bound("b", "blockIdx.x", const(1), body))
    text = str(plan_kernels(func).kernels[0].body)
    guard = "for threadIdx.x.uniform in range(0, 1):  # threadIdx.x"
    assert text.count(guard) == 1
    assert text.index("L[0] = 1.0") < text.index(guard) < text.index("Y[0] = 0.0")
    assert text.index(guard) < text.index("for k in range(0, 8):")


def test_code_outside_every_bound_loop_is_an_error():
    a = sl.placeholder((10,), name="A")
    c = sl.compute((10,), lambda i: a[i] * 2.0, name="C")
    s = sl.create_schedule(c)
    with pytest.raises(sl.LoweringError, match=r"\(stage 'C'\) runs outside every loop bound"):
        sl.build(s, [a, c], target="cuda")
    with pytest.raises(sl.LoweringError, match="bind its loops to blockIdx/threadIdx"):
        sl.build(s, [a, c], target="cuda")


def test_a_parallel_loop_is_an_error():
    a = sl.placeholder((64, 64), name="A")
    b = sl.compute((64, 64), lambda i, j: a[i, j] + 1.0, name="B")
    s = sl.create_schedule(b)
    bind(s, b, (b.op.axis[1], "threadIdx.x"))
    s[b].parallel(b.op.axis[0])
    with pytest.raises(sl.LoweringError, match="loop i is marked parallel.*bind it to blockIdx"):
        sl.build(s, [a, b], target="cuda")


def test_a_block_loop_inside_a_serial_loop_of_a_kernel_is_an_error():
    a = sl.placeholder((4, 8, 64), name="A")
    b = sl.compute((4, 8, 64), lambda h, i, j: a[h, i, j] + 1.0, name="B")
    s = sl.create_schedule(b)
    jo, ji = s[b].split(b.op.axis[2], factor=32)
    bind(s, b, (b.op.axis[0], "blockIdx.y"), (jo, "blockIdx.x"), (ji, "threadIdx.x"))
    with pytest.raises(sl.LoweringError, match="j.outer is bound to blockIdx.x but runs inside"):
        sl.build(s, [a, b], target="cuda")


def test_a_serial_loop_around_block_loops_is_run_by_the_host():
    a = sl.placeholder((8, 64), name="A")
    b = sl.compute((8, 64), lambda i, j: a[i, j] + 1.0, name="B")
    s = sl.create_schedule(b)
    jo, ji = s[b].split(b.op.axis[1], factor=32)
    bind(s, b, (jo, "blockIdx.x"), (ji, "threadIdx.x"))
    kernel = sl.build(s, [a, b], target="cuda")
    (loop,) = kernel._compiled.plan.program
    assert isinstance(loop, HostLoop) and loop.var.name == "i" and loop.body == (0,)
    assert kernel._compiled.plan.loop_vars == (loop.var,)
    x = np.random.default_rng(2).uniform(-1, 1, (8, 64)).astype("float32")
    out = np.full((8, 64), np.nan, "float32")
    kernel.simulate(x, out)
    np.testing.assert_array_equal(out, x + 1)


def test_a_global_buffer_inside_a_kernel_is_an_error():
    x, y = Buffer("X", (const(4),), F32), Buffer("Y", (const(4),), F32)
    tmp = Buffer("T", (const(4),), F32, "global")
    tx = loop_var("tx")
    body = seq(store(tmp, (tx,), load(x, tx)), store(y, (tx,), load(tmp, tx)))
    kernel = bound(
        "b", "blockIdx.x", const(1), Allocate(tmp, bound("tx", "threadIdx.x", const(4), body))
    )
    func = LoweredFunc("k", (x, y), (), kernel)
    with pytest.raises(sl.LoweringError, match="global buffer 'T' is allocated inside a kernel"):
        plan_kernels(func)


def test_a_shared_buffer_of_symbolic_size_is_an_error():
    n = sl.var("n")
    x = Buffer("X", (n,), F32)
    tile = Buffer("S", (n,), F32, "shared")
    func = LoweredFunc(
        "k", (x,), (n,), bound("b", "blockIdx.x", const(1), Allocate(tile, Barrier()))
    )
    with pytest.raises(sl.LoweringError, match=r"shared buffer 'S' has the symbolic shape \[n\]"):
        plan_kernels(func)


def test_symbolic_thread_extents_are_an_error():
    n = sl.var("n")
    x = Buffer("X", (n,), F32)
    tx = loop_var("tx")
    body = bound("tx", "threadIdx.x", n, store(x, (tx,), const(1.0, F32)))
    func = LoweredFunc("k", (x,), (n,), body)
    with pytest.raises(sl.LoweringError, match="symbolic extent n; a block has a fixed number"):
        plan_kernels(func)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("cuda -arch=90", "unknown CUDA architecture '90'; write it as sm_XY"),
        ("cuda -O3", "unknown option '-O3'; the cuda target takes -arch=sm_XY"),
        ("cuda -min-blocks-per-sm=0", "-min-blocks-per-sm=N \\(N a positive integer\\)"),
        ("cuda -min-blocks-per-sm=two", "unknown option '-min-blocks-per-sm=two'"),
        ("cpu -arch=sm_90", "unknown option '-arch=sm_90'"),
        ("tpu", "unknown target 'tpu'; use 'cpu', 'cuda', 'opencl' or 'auto'"),
    ],
)
def test_target_strings(target, message):
    s, inputs, outputs = vector_add()
    with pytest.raises(sl.LoweringError, match=message):
        sl.build(s, inputs + outputs, target=target)


def test_auto_builds_for_cuda_only_where_it_runs():
    s, inputs, outputs = vector_add()
    if not cuda_available():
        with pytest.raises(sl.LoweringError, match="the cpu target has no threads"):
            sl.build(s, inputs + outputs, target="auto")
        return
    assert sl.build(s, inputs + outputs, target="auto").target.startswith("cuda -arch=sm_")


def test_math_without_libdevice_uses_schedlangs_own(monkeypatch):
    monkeypatch.setattr(libdevice, "find", lambda: None)
    monkeypatch.setattr(nvptx_compile, "_memory", {})
    s, inputs, outputs = math("tanh")
    ptx = sl.build(s, inputs + outputs, target="cuda").ptx
    assert "__nv_" not in ptx and ".extern" not in ptx
    s, inputs, outputs = math("pow", "float64")  # the one function it has no version of
    with pytest.raises(sl.LoweringError, match=r"libdevice.10.bc was not found \(searched: "):
        sl.build(s, inputs + outputs, target="cuda")
    s, inputs, outputs = math("sqrt")  # the backend lowers this one itself
    assert "sqrt.rn.f32" in sl.build(s, inputs + outputs, target="cuda").ptx


def test_libdevice_is_found_from_the_environment(monkeypatch, tmp_path):
    fake = tmp_path / "libdevice.10.bc"
    fake.write_bytes(b"BC")
    monkeypatch.setenv("SCHEDLANG_LIBDEVICE", str(fake))
    assert libdevice.candidates()[0] == fake


def with_shared(kernel, nbytes: int):
    """`kernel` with one shared buffer of `nbytes`."""
    return dataclasses.replace(kernel, shared=lay_out_shared(kernel.name, [(kernel, (nbytes,))]))


@pytest.mark.parametrize(
    ("block", "shared", "grid", "message"),
    [
        (
            (2048, 1, 1),
            0,
            (1, 1, 1),
            r"needs 2048 threads per block \(2048, 1, 1\), but H100 runs at most 1024",
        ),
        ((1, 1, 128), 0, (1, 1, 1), "128 threads along threadIdx.z, but H100 allows at most 64"),
        (
            (32, 1, 1),
            240_000,
            (1, 1, 1),
            r"needs 240000 bytes of shared memory per block, but H100 gives a block at most "
            r"232448 \(opting in above 49152\); stage smaller tiles in shared memory",
        ),
        (
            (32, 1, 1),
            0,
            (1, 70000, 1),
            "70000 blocks along blockIdx.y, but H100 allows at most 65535",
        ),
    ],
)
def test_launch_limits_are_checked_before_launching(block, shared, grid, message):
    plan = plan_kernels(lowered(vector_add))
    kernel = dataclasses.replace(with_shared(plan.kernels[0], shared), block=block)
    with pytest.raises(sl.LaunchError, match=message):
        check_block(kernel, "main/main_kernel0", H100)
        check_grid("main/main_kernel0", grid, H100)


@pytest.mark.parametrize("nbytes", [48 * 1024, 48 * 1024 + 16, 232_448])
def test_shared_memory_up_to_the_opt_in_limit_is_fine(nbytes):
    kernel = with_shared(plan_kernels(lowered(vector_add)).kernels[0], nbytes)
    check_block(kernel, "main/main_kernel0", H100)
    assert kernel.dynamic_shared_bytes == (nbytes if nbytes > 48 * 1024 else 0)


def test_static_shared_memory_is_checked_against_the_limit_without_opt_in():
    small = dataclasses.replace(H100, name="a small GPU", max_shared=16384)
    kernel = with_shared(plan_kernels(lowered(vector_add)).kernels[0], 20000)
    with pytest.raises(sl.LaunchError, match="needs 20000 bytes .* at most 16384 .opting in"):
        check_block(kernel, "main/main_kernel0", small)


def test_host_arrays_are_checked_before_the_gpu_is_touched():
    s, inputs, outputs = vector_add()
    kernel = sl.build(s, inputs + outputs, target="cuda")
    x = np.ones(10, np.float32)
    with pytest.raises(TypeError, match="takes 3 arrays"):
        kernel(x)  # (two arrays would be its inputs alone: the output is then made)
    with pytest.raises(TypeError, match="argument 'B' must have dtype float32, got float64"):
        kernel(x, x.astype(np.float64), x.copy())
    with pytest.raises(ValueError, match="dimension 0 of 'B'"):
        kernel(x, np.ones(11, np.float32), x.copy())
    with pytest.raises(TypeError, match="argument 'A' must be a numpy array, an sl.array"):
        kernel([1.0] * 10, x, x.copy())
    with pytest.raises(ValueError, match="argument 'C' is an output that overlaps 'A'"):
        kernel(x, x.copy(), x)
    frozen = x.copy()
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="argument 'C' is an output but its array is read-only"):
        kernel(x, x.copy(), frozen)


@pytest.mark.skipif(cuda_available(), reason="a CUDA driver is present")
def test_calling_without_a_driver_is_a_launch_error():
    s, inputs, outputs = vector_add()
    kernel = sl.build(s, inputs + outputs, target="cuda")
    x = np.ones(10, np.float32)
    with pytest.raises(sl.LaunchError, match=r"no CUDA driver.*kernel\.simulate") as raised:
        kernel(x, x.copy(), np.empty_like(x))
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # one error
    z = np.full_like(x, np.nan)
    kernel.simulate(x, x.copy(), z)  # what the message points to
    np.testing.assert_array_equal(z, 2 * x)


def test_cpu_device_arrays():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    host = sl.array(data, device="cpu")
    assert host.shape == (2, 3) and host.dtype == np.float32 and host.device == "cpu"
    np.testing.assert_array_equal(host.numpy(), data)
    assert not hasattr(host, "__cuda_array_interface__")
    assert sl.empty((4,), "float16", device="cpu").numpy().dtype == np.float16
    for shape in [(1,), (3, 5), (17, 1, 3)]:  # each on a cache line, as vector code likes
        assert sl.empty(shape, "float32", device="cpu").numpy().ctypes.data % 64 == 0
        assert sl.empty(shape, "float32", device="cpu").numpy().shape == shape
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        sl.empty(3, device="tpu")


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8", "uint32", "bool"])
def test_cpu_device_arrays_export_dlpack(dtype):
    data = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    host = sl.array(data, device="cpu")
    view = np.from_dlpack(host)
    np.testing.assert_array_equal(view, data)
    host.numpy()[0, 0] = 1
    assert view[0, 0] == 1  # the same memory, not a copy
    del host
    np.testing.assert_array_equal(view[1:], data[1:])  # the view keeps the memory alive
    exports = len(exporter._alive)
    del view
    assert len(exporter._alive) == exports - 1  # the consumer's deleter released it
    unused = sl.array(data, device="cpu").__dlpack__()
    del unused
    assert len(exporter._alive) == exports - 1  # so did the capsule nobody consumed


def test_cpu_kernels_take_cpu_device_arrays():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 3.0, name="C")
    kernel = sl.build(sl.create_schedule(c), [a, c], target="cpu")
    x = sl.array(np.arange(5, dtype=np.float32), device="cpu")
    out = sl.empty((5,), "float32", device="cpu")
    kernel(x, out)
    np.testing.assert_array_equal(out.numpy(), np.arange(5, dtype=np.float32) * 3.0)


def test_more_threads_than_any_gpu_runs_is_refused_when_building():
    """1024 threads per block is every CUDA GPU's limit, so the build says it, before a GPU
    is needed (the launch still checks the device's own limits)."""
    s, inputs, outputs = vector_add(None, 2048)
    with pytest.raises(sl.LoweringError, match=r"a block of \(2048, 1, 1\) is 2048 threads"):
        sl.build(s, inputs + outputs, target="cuda")


def test_small_regions_of_a_swizzled_dynamic_layout_go_last_16_bytes_apart():
    """A swizzle's tiles start at multiples of 1024 bytes; memory barriers beside them need 8.
    Padded to 1024 each, four arrays of barriers took 4 KB (attention's 224 KB of tiles then
    asked more than a block may have)."""
    tiles = [object() for _ in range(3)]
    barriers = [object() for _ in range(4)]
    owners = [(tiles[0], (32768,)), (barriers[0], (24,)), (barriers[1], (24,))]
    owners += [(tiles[1], (98304,)), (barriers[2], (24,)), (barriers[3], (24,))]
    owners += [(tiles[2], (98304,))]
    loose = frozenset(id(b) for b in barriers)
    layout = lay_out_shared("k", owners, 1024, loose)
    assert [layout.region(t)[0] for t in tiles] == [0, 32768, 131072]
    assert [layout.region(b)[0] for b in barriers] == [229376 + 32 * k for k in range(4)]
    assert layout.nbytes == 229376 + 4 * 32 and layout.dynamic  # within 227 KB
    static = lay_out_shared("k", owners[:2], 1024, loose)  # ptxas lays static arrays out
    assert static.region(barriers[0]) == (32768, 1024) and not static.dynamic
