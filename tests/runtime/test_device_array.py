"""`DeviceArray.poison`: the values an output starts from when a kernel is checked."""

from __future__ import annotations

import numpy as np
import pytest

from schedlang.runtime.device_array import DeviceArray


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_poison_fills_floats_with_nan(dtype):
    a = DeviceArray((5, 3), dtype, "cpu")
    a.numpy()[...] = 1
    a.poison()
    assert np.isnan(a.numpy().astype(np.float64)).all()


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint32"])
def test_poison_fills_integers_with_a_pattern_far_from_small_values(dtype):
    a = DeviceArray((7,), dtype, "cpu")
    a.poison()
    values = a.numpy().astype(np.float64)
    assert (values == values[0]).all() and abs(values[0]) > 40


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_poison_on_the_gpu_is_the_same_as_on_the_cpu(dtype):
    gpu, cpu = DeviceArray((33,), dtype, "cuda"), DeviceArray((33,), dtype, "cpu")
    gpu.poison()
    cpu.poison()
    np.testing.assert_array_equal(gpu.numpy().view(np.uint8), cpu.numpy().view(np.uint8))
