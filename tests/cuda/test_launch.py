"""How a CUDA kernel call drives the driver, checked without a GPU through `fake_driver`: a
call is prepared once (arguments placed, grids checked, temporaries allocated, one parameter
list built) and then only launched, so that `Kernel.time` measures the kernels alone."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import schedlang as sl

from .fake_driver import H100, FakeDriver, install
from .kernels import two_kernels, vector_add


def build(make, *args):
    s, inputs, outputs = make(*args)
    return sl.build(s, inputs + outputs, target="cuda")


def between_events(names: list[str]) -> list[list[str]]:
    """The calls between each pair of ``cuEventRecord``s."""
    marks = [k for k, name in enumerate(names) if name == "cuEventRecord"]
    return [names[a + 1 : b] for a, b in zip(marks[::2], marks[1::2])]


def test_time_measures_only_the_launches(monkeypatch):
    fake = FakeDriver(parameters=4, elapsed_ms=(5.0, 1.0, 3.0))
    install(monkeypatch, fake)
    kernel = build(two_kernels)
    x = np.ones(100, np.float32)
    seconds = kernel.time(x, np.empty_like(x), repeat=3, warmup=2)
    assert seconds == pytest.approx(0.003)  # the median of the three runs
    names = fake.names()
    assert between_events(names) == [["cuLaunchKernel", "cuLaunchKernel"]] * 3
    assert names.count("cuLaunchKernel") == 2 * (2 + 3)
    first_launch = names.index("cuLaunchKernel")
    assert names[:first_launch].count("cuMemAlloc") == 3  # A and C copied in, the temporary B
    assert "cuMemAlloc" not in names[first_launch:]
    assert names.count("cuMemcpyDtoH") == 1  # C copied back once, after the last run


def test_every_launch_takes_the_one_parameter_list(monkeypatch):
    fake = FakeDriver(parameters=4)
    install(monkeypatch, fake)
    kernel = build(two_kernels)
    x = np.ones(100, np.float32)
    kernel(x, np.empty_like(x))
    names = fake.names()
    allocated = [c.args for c in fake.calls if c.name == "cuMemAlloc"]
    launches = [c for c in fake.calls if c.name == "cuLaunchKernel"]
    assert [c.args[0] for c in launches] == ["function main_kernel0", "function main_kernel1"]
    assert [c.args[1] for c in launches] == [(4, 1, 1), (4, 1, 1)]  # 100 elements, 32 a block
    assert all(c.args[2] == (32, 1, 1) and c.args[3:5] == (0, 0) for c in launches)
    assert len({c.args[5] for c in launches}) == 1
    pointers = [c.args[0] for c in fake.calls if c.name == "cuMemcpyHtoD"]
    a_copy, c_copy, temp = sorted(p for p in _allocations(fake))
    assert pointers == [a_copy, c_copy]  # the temporary is not copied in
    assert fake.launched == [(a_copy, c_copy, temp, 100)] * 2  # A, C, the temporary B, n
    assert allocated == [(400,), (400,), (400,)]
    assert names.index("cuStreamSynchronize") > names.index("cuLaunchKernel")
    assert names.index("cuMemcpyDtoH") > names.index("cuStreamSynchronize")


def _allocations(fake: FakeDriver) -> list[int]:
    """The addresses the fake handed out, recomputed from its allocation sizes."""
    ptr, found = 1 << 20, []
    for call in fake.calls:
        if call.name == "cuMemAlloc":
            found.append(ptr)
            ptr += -(-call.args[0] // 256) * 256 + 256
    return found


def test_an_empty_grid_is_not_launched(monkeypatch):
    fake = FakeDriver()
    install(monkeypatch, fake)
    kernel = build(vector_add)
    empty = np.empty(0, np.float32)
    kernel(empty, empty.copy(), empty.copy())
    assert "cuLaunchKernel" not in fake.names()


class GpuTensor:
    """A tensor in (fake) GPU memory, seen through ``__cuda_array_interface__``."""

    def __init__(self, shape: tuple[int, ...], ptr: int = 1 << 40) -> None:
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": "<f4",
            "data": (ptr, False),
            "strides": None,
            "version": 3,
        }


def test_a_grid_too_large_is_refused_before_anything_runs(monkeypatch):
    fake = FakeDriver()
    install(monkeypatch, fake, dataclasses.replace(H100, max_grid=(64, 64, 64)))
    kernel = build(vector_add, None, 1)
    arrays = [GpuTensor((100,), ptr) for ptr in (1 << 40, 1 << 41, 1 << 42)]
    with pytest.raises(sl.LaunchError, match="has 100 blocks along blockIdx.x, but H100 allows"):
        kernel.time(*arrays, repeat=1)
    assert "cuLaunchKernel" not in fake.names()


def test_a_host_loop_launches_its_kernel_once_a_step_with_the_step_set(monkeypatch):
    """A scan's steps: the kernel of the update runs once per step, each launch reading the
    step from the parameter list, which the driver copies at each launch."""
    fake = FakeDriver(parameters=4)  # X, the scan, m, n and then t: the first four read
    install(monkeypatch, fake)
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="update")
    kernel = _scan_kernel(x, init, update, state)
    fake.parameters = 5
    data = np.ones((6, 40), np.float32)
    kernel(data, np.empty_like(data))
    launches = [c for c in fake.calls if c.name == "cuLaunchKernel"]
    assert [c.args[0] for c in launches] == ["function main_kernel0"] + [
        "function main_kernel1"
    ] * 5
    assert all(c.args[1] == (2, 1, 1) for c in launches)  # 40 columns, 32 a block
    assert [values[2:] for values in fake.launched] == [(6, 40, 0)] + [
        (6, 40, t) for t in range(1, 6)
    ]


def _scan_kernel(x, init, update, state):
    """The scan of `init` and `update` with its columns on blocks of 32 threads, for cuda."""
    result = sl.scan(init, update, state)
    s = sl.create_schedule(result)
    for stage in (init, update):
        outer, inner = s[stage].split(stage.op.axis[1], factor=32)
        s[stage].bind(outer, sl.thread_axis("blockIdx.x"))
        s[stage].bind(inner, sl.thread_axis("threadIdx.x"))
    return sl.build(s, [x, result], target="cuda")


def test_a_scan_whose_init_does_not_fit_its_steps_is_refused_before_anything_runs(monkeypatch):
    """Two init rows and one step: the init's rows would be stored past the scan's end."""
    fake = FakeDriver(parameters=4)
    install(monkeypatch, fake)
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((2, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((2, n), lambda t, i: x[t, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i] + state[t - 2, i], name="update")
    kernel = _scan_kernel(x, init, update, state)
    with pytest.raises(sl.LaunchError, match=r"the init 'init' gives 2 rows, but the state"):
        kernel(GpuTensor((2, 40)), GpuTensor((1, 40), 1 << 41))
    assert "cuLaunchKernel" not in fake.names()
