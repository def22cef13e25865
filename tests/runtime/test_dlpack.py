"""Arrays that come through DLPack: reading a capsule, taking and releasing it, and CPU kernels
called on host memory that only DLPack exports (a torch CPU tensor, a JAX array on the cpu)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import schedlang as sl
from schedlang.runtime.dlpack import importer
from schedlang.runtime.dlpack.abi import (
    KDL_CUDA,
    KDL_ROCM,
    NAME,
    USED_NAME,
    capsule_valid,
    numpy_dtype,
)

from .dlpack_producers import GpuProducer, HostProducer


@pytest.fixture
def triple():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 3.0, name="C")
    return sl.build(sl.create_schedule(c), [a, c], target="cpu")


def test_a_capsule_is_read_as_its_producer_describes_it():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    tensor = importer.read("A", data.T.__dlpack__())
    assert tensor.device == (1, 0) and tensor.ptr == data.ctypes.data
    assert tensor.shape == (4, 3) and tensor.strides == (1, 4)  # in elements
    assert (tensor.code, tensor.bits, tensor.lanes) == (2, 32, 1)
    producer = GpuProducer(4096, (2, 8), element=(0, 16, 1), byte_offset=48)
    tensor = importer.read("A", producer.__dlpack__())
    assert tensor.device == (KDL_CUDA, 0) and tensor.ptr == 4096 + 48
    assert tensor.shape == (2, 8) and tensor.strides is None
    assert (tensor.code, tensor.bits) == (0, 16)


def test_a_capsule_taken_is_released_once():
    data = np.arange(5, dtype=np.int64)
    capsule = data.__dlpack__()
    references = sys.getrefcount(data)
    taken = importer.Taken(capsule)
    assert capsule_valid(capsule, USED_NAME) and not capsule_valid(capsule, NAME)
    del capsule  # the consumer owns the tensor now, which holds the array
    assert sys.getrefcount(data) == references
    taken.release()
    assert sys.getrefcount(data) == references - 1  # numpy's deleter let go of the array
    taken.release()
    producer = GpuProducer(4096, (4,))
    dropped = importer.Taken(producer.__dlpack__())
    del dropped
    assert producer.deleted == 1


def test_a_used_capsule_is_refused():
    capsule = np.ones(3, np.float32).__dlpack__()
    importer.Taken(capsule).release()
    with pytest.raises(TypeError, match="argument 'A': __dlpack__.. returned PyCapsule, not an un"):
        importer.read("A", capsule)


@pytest.mark.parametrize(
    ("code", "bits", "dtype"),
    [(0, 8, "int8"), (0, 64, "int64"), (1, 32, "uint32"), (2, 16, "float16")]
    + [(2, 64, "float64"), (4, 16, "bfloat16"), (6, 8, "bool")]
    + [(5, 64, None), (2, 8, None), (6, 32, None), (4, 32, None), (3, 64, None)],
)
def test_element_types(code, bits, dtype):
    expected = None if dtype is None else sl.DeviceArray((1,), dtype, "cpu").dtype
    assert numpy_dtype(code, bits) == expected


@pytest.mark.parametrize("versioned", [True, False])
def test_cpu_kernels_read_host_memory_through_dlpack(triple, versioned):
    x = np.arange(6, dtype=np.float32)
    out = np.zeros(6, np.float32)
    triple(HostProducer(x, versioned), out)
    np.testing.assert_array_equal(out, x * 3.0)


def test_cpu_kernels_write_dlpack_outputs_in_place(triple):
    x = np.arange(6, dtype=np.float32)
    out = np.zeros(6, np.float32)
    triple(x, HostProducer(out))
    np.testing.assert_array_equal(out, x * 3.0)
    with pytest.raises(ValueError, match="argument 'C' is an output but its array is read-only"):
        triple(x, HostProducer(out, versioned=False))  # numpy reads old exports read-only


def test_cpu_kernels_check_dlpack_arrays_like_numpy_ones(triple):
    x = np.arange(6, dtype=np.float64)
    with pytest.raises(TypeError, match="argument 'A' must have dtype float32, got float64"):
        triple(HostProducer(x), np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="argument 'C' is an output but is not C-contiguous"):
        triple(np.zeros(3, np.float32), HostProducer(np.zeros(6, np.float32)[::2]))


@pytest.mark.parametrize(
    ("device", "where"), [((KDL_CUDA, 0), "CUDA GPU"), ((KDL_ROCM, 0), "ROCm GPU")]
)
def test_cpu_kernels_refuse_gpu_memory(triple, device, where):
    tensor = GpuProducer(4096, (6,), device=device)
    with pytest.raises(TypeError, match=f"argument 'A' is in {where} memory, but this kernel runs"):
        triple(tensor, np.zeros(6, np.float32))
    assert tensor.capsules == []  # refused from __dlpack_device__ alone
