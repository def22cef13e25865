"""CUDA kernels called on DLPack tensors, checked without a GPU: the producer is asked for the
legacy default stream, its pointer goes to the kernels as it is, the tensor is handed back
after the kernels are done, and a tensor the checks refuse is never taken."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.runtime.dlpack.abi import KDL_CUDA, KDL_ROCM
from tests.runtime.dlpack_producers import GpuProducer, HostProducer

from .fake_driver import Call, FakeDriver, install
from .kernels import vector_add

A, B, C = 1 << 32, 1 << 33, 1 << 34  # where the fake tensors claim to be


@pytest.fixture
def kernel():
    s, inputs, outputs = vector_add()
    return sl.build(s, inputs + outputs, target="cuda")


@pytest.fixture
def fake(monkeypatch):
    driver = FakeDriver(parameters=4)
    install(monkeypatch, driver)
    return driver


def producers(fake, n=100, **options):
    """Tensors A, B, C whose deleters show up in the fake driver's calls."""

    def note(name):
        return lambda: fake.calls.append(Call("deleter", (name,)))

    return [
        GpuProducer(ptr, (n,), on_delete=note(name), **options)
        for ptr, name in ((A, "A"), (B, "B"), (C, "C"))
    ]


def test_gpu_tensors_are_passed_in_place_and_handed_back(kernel, fake):
    tensors = producers(fake)
    kernel(*tensors)
    assert fake.launched == [(A, B, C, 100)]
    assert [t.requests for t in tensors] == [[{"stream": 1}]] * 3  # the legacy default stream
    assert [t.taken() for t in tensors] == [[True]] * 3
    assert [t.deleted for t in tensors] == [1, 1, 1]
    names = fake.names()
    assert "cuMemAlloc" not in names and "cuMemcpyHtoD" not in names
    assert names[names.index("cuStreamSynchronize") + 1 :] == ["deleter"] * 3


def test_timing_hands_the_tensors_back_after_the_last_run(kernel, fake):
    tensors = producers(fake)
    kernel.time(*tensors, repeat=3, warmup=1)
    assert fake.launched == [(A, B, C, 100)] * 4
    assert [t.deleted for t in tensors] == [1, 1, 1]
    assert fake.names()[-3:] == ["deleter"] * 3


def test_producers_without_the_stream_argument(kernel, fake):
    tensors = producers(fake, stream_keyword=False)
    kernel(*tensors)
    assert [t.requests for t in tensors] == [[{}]] * 3
    assert fake.launched == [(A, B, C, 100)]


def test_the_byte_offset_is_added_and_strides_may_state_contiguity(kernel, fake):
    a = GpuProducer(A - 64, (100,), byte_offset=64)
    b = GpuProducer(B, (100,), strides=(1,))
    kernel(a, b, GpuProducer(C, (100,), strides=(1,)))
    assert fake.launched == [(A, B, C, 100)]


def test_strides_of_extent_one_are_free(monkeypatch):
    """A row of a matrix (shape (1, n)) may carry any stride for its one row."""
    x = sl.placeholder((1, 100), name="X")
    y = sl.compute((1, 100), lambda i, j: x[i, j] * 2.0, name="Y")
    s = sl.create_schedule(y)
    jo, ji = s[y].split(y.op.axis[1], factor=32)
    s[y].bind(jo, sl.thread_axis("blockIdx.x"))
    s[y].bind(ji, sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [x, y], target="cuda")
    fake = FakeDriver(parameters=2)
    install(monkeypatch, fake)
    kernel(GpuProducer(A, (1, 100), strides=(7, 1)), GpuProducer(B, (1, 100)))
    assert fake.launched == [(A, B)]


def test_host_memory_through_dlpack_is_copied_in_and_out(kernel, fake):
    x = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    kernel(HostProducer(x), GpuProducer(B, (100,)), HostProducer(out))
    assert fake.names().count("cuMemcpyHtoD") == 2 and fake.names().count("cuMemcpyDtoH") == 1
    with pytest.raises(ValueError, match="argument 'C' is an output but its array is read-only"):
        kernel(x, x.copy(), HostProducer(out, versioned=False))


ERRORS = [
    (
        {"element": (5, 64, 1)},
        TypeError,
        "argument 'A' has the DLPack element type code 5 with 64 bits and 1 lane",
    ),
    ({"element": (2, 32, 4)}, TypeError, "code 2 with 32 bits and 4 lane.s., which no schedlang"),
    ({"element": (2, 64, 1)}, TypeError, "argument 'A' must have dtype float32, got float64"),
    (
        {"strides": (2,)},
        ValueError,
        r"argument 'A' is not C-contiguous on the GPU \(strides \(8,\) bytes for shape \(100,\)\)",
    ),
    ({"byte_offset": 4}, ValueError, "argument 'A' starts at a GPU address that is not a multi"),
]


@pytest.mark.parametrize(("options", "error", "message"), ERRORS)
def test_refused_tensors_stay_with_their_producer(kernel, fake, options, error, message):
    bad = GpuProducer(A, (100,), **options)
    good = [GpuProducer(B, (100,)), GpuProducer(C, (100,))]
    with pytest.raises(error, match=message):
        kernel(bad, *good)
    assert bad.taken() == [False] and bad.deleted == 0
    assert all(t.taken() in ([], [False]) and t.deleted == 0 for t in good)
    assert "cuLaunchKernel" not in fake.names()


@pytest.mark.parametrize(
    ("device", "where"), [((KDL_ROCM, 0), "ROCm GPU"), ((4, 0), "OpenCL"), ((99, 0), "unknown")]
)
def test_memory_of_other_devices_is_refused(kernel, fake, device, where):
    bad = GpuProducer(A, (100,), device=device)
    with pytest.raises(ValueError, match=f"argument 'A' is in (an )?{where}.* memory, but the"):
        kernel(bad, GpuProducer(B, (100,)), GpuProducer(C, (100,)))
    assert bad.capsules == []


def test_a_tensor_on_another_gpu_is_refused(kernel, monkeypatch):
    fake = FakeDriver()
    fake.cuPointerGetAttribute = lambda attribute, ptr: ("CUDA_SUCCESS", 1 if ptr == A else 0)
    install(monkeypatch, fake)
    devices = {A: (KDL_CUDA, 1), B: (KDL_CUDA, 0), C: (KDL_CUDA, 0)}
    tensors = [GpuProducer(ptr, (100,), device=device) for ptr, device in devices.items()]
    with pytest.raises(ValueError, match="argument 'A' is not in the memory of GPU 0 .H100."):
        kernel(*tensors)
    assert tensors[0].taken() == [False]
