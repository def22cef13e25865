"""The CUDA target on a GPU: every schedule against the numpy reference, on NaN-poisoned
outputs, with odd and symbolic sizes, through numpy arrays, sl.array device arrays and torch
tensors; launch errors and argument checks. Skipped where no GPU and driver are usable."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from examples import gpu_gemm, gpu_winograd
from tests.schedule.util import random_inputs

from . import kernels
from .kernels import UNARY, math

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]

CASES = [
    ("vector_add", (), {"n": 1}),
    ("vector_add", (), {"n": 100_003}),
    ("row_sum_rfactor", (), {}),
    ("row_sum_rfactor", (33, 1000, 64), {}),
    ("gemm_shared", (), {"m": 13, "n": 10}),
    ("gemm_shared", (), {"m": 1, "n": 5}),
    ("gemm_shared", (), {"m": 67, "n": 130}),
    ("gemm_registers", (), {}),
    ("gemm_double_buffered", (), {"m": 13, "n": 10}),
    ("gemm_double_buffered", (), {"m": 67, "n": 130}),
    ("gemm_registers", (128,), {}),
    ("te_gemm", (), {}),
    ("te_gemm", (32, 32, 16), {}),
    ("te_gemm", (1, 5, 1), {}),
    ("te_gemm", (100, 67, 33), {}),
    ("te_gemm", (512, 512, 512), {}),
    ("te_gemm_64", (), {}),
    ("te_gemm_64", (200,), {}),
    ("transpose", (), {}),
    ("transpose", (1, 1), {}),
    ("transpose", (64, 65), {}),
    ("blur", (), {}),
    ("blur", (3,), {}),
    ("blur", (1001,), {}),
    ("two_kernels", (), {"n": 999}),
]


def build(make, *args, target: str = "cuda"):
    s, inputs, outputs = make(*args)
    return sl.build(s, inputs + outputs, target=target), inputs, outputs


def expected(inputs, outputs, sizes, seed=7):
    values = random_inputs(inputs, sizes, seed)
    return [values[p] for p in inputs], [sl.evaluate(t, values) for t in outputs]


def poisoned(wants):
    return [np.full(w.shape, np.nan, w.dtype) for w in wants]


@pytest.mark.parametrize(("name", "args", "sizes"), CASES, ids=lambda v: str(v))
def test_schedule_matches_the_reference_with_numpy_arrays(name, args, sizes):
    kernel, inputs, outputs = build(kernels.SCHEDULES[name], *args)
    arrays, wants = expected(inputs, outputs, sizes)
    results = poisoned(wants)
    kernel(*arrays, *results)
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", ["gemm_shared", "two_kernels", "row_sum_rfactor"])
def test_device_arrays_stay_on_the_gpu(name):
    kernel, inputs, outputs = build(kernels.SCHEDULES[name])
    arrays, wants = expected(inputs, outputs, {"m": 29, "n": 31})
    device_in = [sl.array(a) for a in arrays]
    device_out = [sl.array(r) for r in poisoned(wants)]
    assert all(isinstance(d, sl.DeviceArray) and d.device == "cuda" for d in device_in)
    kernel(*device_in, *device_out)
    for got, want in zip(device_out, wants):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_torch_tensors_are_used_in_place():
    torch = pytest.importorskip("torch")
    kernel, inputs, outputs = build(kernels.gemm_shared)
    arrays, (want,) = expected(inputs, outputs, {"m": 45, "n": 19})
    a, b = (torch.from_numpy(x).cuda() for x in arrays)
    c = torch.full(want.shape, float("nan"), device="cuda")
    kernel(a, b, c)
    torch.cuda.synchronize()
    np.testing.assert_allclose(c.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="argument 'C' is not C-contiguous on the GPU"):
        kernel(a, b, torch.empty(want.shape[::-1], device="cuda").T)
    c.fill_(float("nan"))
    kernel(a.cpu(), b, c)  # host memory through DLPack: copied in
    np.testing.assert_allclose(c.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(TypeError, match="argument 'B' must have dtype float32, got float64"):
        kernel(a, b.double(), c)
    shifted = torch.cat([torch.zeros(1, device="cuda"), a.flatten()])[1:].view(a.shape)
    with pytest.raises(ValueError, match="argument 'A' starts at a GPU address that is not a mul"):
        kernel(shifted, b, c)


class DLPackOnly:
    """A tensor seen only through DLPack, as a JAX array is (no __cuda_array_interface__)."""

    def __init__(self, tensor) -> None:
        self._tensor = tensor

    def __dlpack__(self, **options):
        return self._tensor.__dlpack__(**options)

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()


class OldDLPack(DLPackOnly):
    """A producer from before the stream argument: ``__dlpack__()`` takes nothing."""

    def __dlpack__(self):
        import torch.utils.dlpack

        return torch.utils.dlpack.to_dlpack(self._tensor)


@pytest.mark.parametrize("wrap", [DLPackOnly, OldDLPack])
def test_dlpack_tensors_are_used_in_place(wrap):
    torch = pytest.importorskip("torch")
    kernel, inputs, outputs = build(kernels.gemm_shared)
    arrays, (want,) = expected(inputs, outputs, {"m": 45, "n": 19})
    a, b = (torch.from_numpy(x).cuda() for x in arrays)
    c = torch.full(want.shape, float("nan"), device="cuda")
    pointer = c.data_ptr()
    kernel(wrap(a), wrap(b), wrap(c))
    torch.cuda.synchronize()
    assert c.data_ptr() == pointer
    np.testing.assert_allclose(c.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    c.fill_(float("nan"))
    kernel.time(wrap(a), wrap(b), wrap(c), repeat=3)
    np.testing.assert_allclose(c.cpu().numpy(), want, rtol=1e-4, atol=1e-4)
    (a + 1).sum().item()  # the tensors are still theirs to use


def test_dlpack_tensors_wait_for_work_on_the_producers_stream():
    """The producer is asked for the legacy default stream: work it queued on another stream
    finishes before the kernels read the tensor."""
    torch = pytest.importorskip("torch")
    kernel, _, _ = build(kernels.vector_add)
    n = 1 << 24
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.ones(n, device="cuda")
        for _ in range(20):
            x = x * 1.0001 + 0.0
        y = torch.ones(n, device="cuda")
        out = torch.full((n,), float("nan"), device="cuda")
        kernel(DLPackOnly(x), DLPackOnly(y), DLPackOnly(out))
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), (x + y).cpu().numpy())


def test_dlpack_tensors_are_checked():
    torch = pytest.importorskip("torch")
    kernel, _, _ = build(kernels.gemm_shared)
    a = torch.ones((45, 11), device="cuda")
    b = torch.ones((11, 19), device="cuda")
    c = torch.empty((45, 19), device="cuda")
    with pytest.raises(ValueError, match="argument 'C' is not C-contiguous on the GPU"):
        kernel(DLPackOnly(a), DLPackOnly(b), DLPackOnly(torch.empty((19, 45), device="cuda").T))
    shifted = torch.cat([torch.zeros(1, device="cuda"), a.flatten()])[1:].view(a.shape)
    with pytest.raises(ValueError, match="argument 'A' starts at a GPU address that is not a mul"):
        kernel(DLPackOnly(shifted), DLPackOnly(b), DLPackOnly(c))
    with pytest.raises(TypeError, match="argument 'B' must have dtype float32, got float64"):
        kernel(DLPackOnly(a), DLPackOnly(b.double()), DLPackOnly(c))
    with pytest.raises(TypeError, match="argument 'B' has the DLPack element type code 5"):
        kernel(DLPackOnly(a), DLPackOnly(b.to(torch.complex64)), DLPackOnly(c))


def test_device_arrays_export_the_cuda_array_interface():
    torch = pytest.importorskip("torch")
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    tensor = torch.as_tensor(sl.array(data), device="cuda")
    np.testing.assert_array_equal(tensor.cpu().numpy(), data)
    device = sl.array(data)
    shared = torch.from_dlpack(device)
    assert shared.is_cuda and shared.data_ptr() == device.ptr
    del device
    np.testing.assert_array_equal(shared.cpu().numpy(), data)
    assert sl.empty((2, 5), "int32").numpy().shape == (2, 5)


def test_gpu_arrays_are_refused_by_cpu_kernels():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 3.0, name="C")
    kernel = sl.build(sl.create_schedule(c), [a, c], target="cpu")
    with pytest.raises(TypeError, match="argument 'A' is in GPU memory, but this kernel runs on"):
        kernel(sl.array(np.ones(4, np.float32)), np.empty(4, np.float32))


def test_outputs_of_any_layout_are_copied_back():
    kernel, inputs, outputs = build(kernels.transpose)
    arrays, (want,) = expected(inputs, outputs, {})
    storage = np.full((want.shape[1], want.shape[0]), np.nan, np.float32)
    kernel(np.asfortranarray(arrays[0]), storage.T)
    np.testing.assert_allclose(storage.T, want, rtol=1e-6)


def test_an_empty_grid_launches_nothing():
    kernel, _, _ = build(kernels.vector_add)
    out = np.empty(0, np.float32)
    kernel(np.empty(0, np.float32), np.empty(0, np.float32), out)
    assert out.shape == (0,)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", [*UNARY, "pow", "fma"])
def test_math_matches_numpy(name, dtype):
    kernel, (a,), (c,) = build(math, name, dtype)
    x = np.random.default_rng(3).uniform(0.1, 3.0, 100).astype(dtype)
    x[:4] = [0.5, 1.5, 2.5, 1.0]  # ties for round
    want = sl.evaluate(c, {a: x})
    got = np.full_like(x, np.nan)
    kernel(x, got)
    single = dtype == "float32"
    np.testing.assert_allclose(
        got, want, rtol=2e-6 if single else 1e-12, atol=1e-6 if single else 1e-14
    )


def test_timing_and_launch_config():
    kernel, inputs, outputs = build(kernels.gemm_registers, 128)
    arrays, wants = expected(inputs, outputs, {})
    results = poisoned(wants)
    seconds = kernel.time(*arrays, *results, repeat=5, warmup=2)
    assert 0 < seconds < 1
    np.testing.assert_allclose(results[0], wants[0], rtol=1e-4, atol=1e-4)
    (config,) = kernel.launch_config
    assert config.block == (8, 8, 1) and config.grid == ("4", "4", "1")
    assert config.shared_bytes == 2048 and 0 < config.registers <= 255


def test_timing_reruns_one_prepared_launch():
    """time() launches the kernels of one prepared call again and again (the temporary
    between the two kernels is allocated once); the outputs are right afterwards."""
    kernel, inputs, outputs = build(kernels.two_kernels)
    arrays, (want,) = expected(inputs, outputs, {"n": 100_003})
    device_in = [sl.array(a) for a in arrays]
    device_out = sl.array(np.full(want.shape, np.nan, want.dtype))
    seconds = kernel.time(*device_in, device_out, repeat=20, warmup=3)
    assert 0 < seconds < 0.1
    np.testing.assert_allclose(device_out.numpy(), want, rtol=1e-6)
    host_out = np.full(want.shape, np.nan, want.dtype)
    assert 0 < kernel.time(*arrays, host_out, repeat=3, warmup=0) < 0.1
    np.testing.assert_allclose(host_out, want, rtol=1e-6)


def test_auto_picks_cuda():
    kernel, _, _ = build(kernels.vector_add, target="auto")
    assert kernel.target.startswith("cuda -arch=sm_")


def test_too_much_shared_memory_is_a_launch_error():
    """256 KB of shared memory per block: more than any GPU gives one, even opting in."""
    n = 1 << 17
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((n,), lambda i: b[i] + 1.0, name="C")
    s = sl.create_schedule(c)
    bo, bi = s[c].split(c.op.axis[0], factor=65536)
    _, tx = s[c].split(bi, factor=256)
    kernels.bind(s, c, (bo, "blockIdx.x"), (tx, "threadIdx.x"))
    s[b].compute_at(s[c], bo)
    s[b].set_scope("shared")
    _, btx = s[b].split(b.op.axis[0], factor=256)
    kernels.bind(s, b, (btx, "threadIdx.x"))
    kernel = sl.build(s, [a, c], target="cuda")
    x = np.ones(n, np.float32)
    with pytest.raises(sl.LaunchError, match="needs 262144 bytes of shared memory per block"):
        kernel(x, np.empty_like(x))


@pytest.mark.parametrize("n", [6144, 8192, 12800])
def test_shared_memory_above_48_kb(n):
    """Rows of 48 KB (static), 64 KB and 100 KB (dynamic, opted into) in shared memory."""
    kernel, inputs, outputs = build(kernels.shared_rows, 5, n)
    arrays, (want,) = expected(inputs, outputs, {})
    (config,) = kernel.launch_config
    assert config.shared_bytes == 8 * n and config.dynamic_shared == (8 * n > 48 * 1024)
    results = poisoned([want])
    kernel(*arrays, *results)
    np.testing.assert_array_equal(results[0], want)
    device_in = [sl.array(a) for a in arrays]
    device_out = sl.array(poisoned([want])[0])
    assert 0 < kernel.time(*device_in, device_out, repeat=3) < 0.1
    np.testing.assert_array_equal(device_out.numpy(), want)
    assert 0 < config.registers <= 255


@pytest.mark.usefixtures("all_dynamic")
@pytest.mark.parametrize(("name", "args", "sizes"), CASES, ids=lambda v: str(v))
def test_schedule_matches_the_reference_with_dynamic_shared_memory(name, args, sizes):
    """Every schedule with its shared memory dynamic, as kernels above 48 KB have it."""
    kernel, inputs, outputs = build(kernels.SCHEDULES[name], *args)
    assert all(c.dynamic_shared == (c.shared_bytes > 0) for c in kernel.launch_config)
    arrays, wants = expected(inputs, outputs, sizes)
    results = poisoned(wants)
    kernel(*arrays, *results)
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_ptx_for_a_newer_gpu_is_a_launch_error_that_names_the_kernel():
    kernel, _, _ = build(kernels.vector_add, target="cuda -arch=sm_120")
    x = np.ones(8, np.float32)
    with pytest.raises(sl.LaunchError, match=r"loading the PTX of kernel 'main'.*-arch=sm_"):
        kernel(x, x.copy(), np.empty_like(x))


def test_example_gemm_with_partial_tiles_on_the_gpu():
    """The example GEMM at sizes its 128-wide tiles overhang: the shared tiles are filled whole
    from clamped reads (`poly.box_fill`), only the stores are guarded."""
    m, n, k = 200, 236, 40
    kernel = gpu_gemm.build(m, n, k)
    rng = np.random.default_rng(4)
    at = rng.standard_normal((k, m)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    kernel(at, b, c)
    np.testing.assert_allclose(c, at.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_example_winograd_on_the_gpu():
    """Winograd F(4x4, 3x3) with the example's own schedule at a shape that divides none of its
    tiles, against the direct convolution in float64."""
    n, c, f, size = 9, 19, 33, 13
    kernel = gpu_winograd.build(n, c, f, size)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((size, size, c, n)).astype(np.float32)
    w = rng.standard_normal((3, 3, c, f)).astype(np.float32)
    out = np.full((size, size, f, n), np.nan, np.float32)
    kernel(a, w, out)
    padded = np.pad(a.astype(np.float64), ((1, 1), (1, 1), (0, 0), (0, 0)))
    want = sum(
        np.einsum("yxcn,cf->yxfn", padded[ry : ry + size, rx : rx + size], w[ry, rx])
        for ry in range(3)
        for rx in range(3)
    )
    error = np.abs(out - want).max() / np.abs(want).max()
    assert error < 1e-5, error


def test_example_gemm_tuned_picks_a_step_and_is_right():
    kernel, step = gpu_gemm.tuned(300, 260, 64, repeat=2)
    assert step in (8, 16)
    rng = np.random.default_rng(6)
    at = rng.standard_normal((64, 300)).astype(np.float32)
    b = rng.standard_normal((64, 260)).astype(np.float32)
    c = np.full((300, 260), np.nan, np.float32)
    kernel(at, b, c)
    np.testing.assert_allclose(c, at.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)
