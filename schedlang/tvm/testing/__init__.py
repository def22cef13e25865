"""``tvm.testing``: numpy's checks on TE arrays, the decorators TE's tests mark themselves
with (which skip, through pytest, what this machine cannot run), and TE's parameters and
fixtures (`pytest_params`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...platform_info import cuda_available, cuda_devices
from ..pytest_params import fixture, parameter, parameters, parametrize_targets  # noqa: F401
from ..runtime import NDArray
from ..target import CPU_KINDS, CUDA_KINDS, OPENCL_KINDS


def assert_allclose(
    actual: object, desired: object, rtol: float = 1e-7, atol: float = 0.0, verbose: bool = True
) -> None:
    """numpy's ``assert_allclose``, on NDArrays as on numpy arrays."""
    np.testing.assert_allclose(
        _values(actual), _values(desired), rtol=rtol, atol=atol, verbose=verbose
    )


def device_enabled(target: object) -> bool:
    """Whether `target` can run here: the CPU always, CUDA where a GPU is usable, OpenCL
    where pyopencl finds a device."""
    kind = str(target).split()[0] if str(target).split() else ""
    if kind in (*CPU_KINDS, "cpu"):
        return True
    if kind in OPENCL_KINDS:
        from ...runtime.opencl.device import opencl_available

        return opencl_available()
    return kind in (*CUDA_KINDS, "gpu") and cuda_available()


def _values(value: object) -> np.ndarray:
    return value.numpy() if isinstance(value, NDArray) else np.asarray(value)


def uses_gpu(test: Callable) -> Callable:
    """TE's mark for a test that runs on a GPU where there is one and on the CPU regardless:
    it runs as it is."""
    return test


def skip_if_wheel_test(test: Callable) -> Callable:
    """TE's mark for a test that needs TVM's source tree (not a wheel): it runs as it is."""
    return test


def requires_llvm(test: Callable) -> Callable:
    """Runs: schedlang always compiles for the CPU through LLVM."""
    return test


def requires_gpu(test: Callable) -> Callable:
    """Skipped where no CUDA GPU is usable."""
    return _skip_unless(cuda_available(), "no usable CUDA GPU here", test)


requires_cuda = requires_gpu


def requires_tensorcore(test: Callable) -> Callable:
    """Skipped unless a GPU with tensor cores (compute capability 7.0 or more) is usable."""
    tensor_cores = cuda_available() and any(
        gpu.compute_capability >= (7, 0) for gpu in cuda_devices()
    )
    return _skip_unless(tensor_cores, "no GPU with tensor cores here", test)


def _skip_unless(condition: bool, reason: str, test: Callable) -> Callable:
    import pytest  # a test dependency, imported only where a test is marked

    return pytest.mark.skipif(not condition, reason=reason)(test)


def check_numerical_grads(
    function: Callable,
    input_values: object,
    grad_values: object,
    function_value: object = None,
    delta: float = 1e-3,
    atol: float = 1e-2,
    rtol: float = 0.1,
) -> None:
    """That `grad_values` are the gradients of the scalar `function` at `input_values` (lists,
    or dicts by argument name), against central differences with step `delta`. As in TE, the
    gradients are compared whole: the distance between the two must stay within
    ``atol * sqrt(size) + rtol * norm(numeric)``, since single elements of a float32 function
    differenced are noisy."""
    if isinstance(input_values, dict):
        names = list(input_values)
        values = [np.asarray(input_values[n]) for n in names]
        grads = [np.asarray(grad_values[n]) for n in names]

        def call(*args):
            return function(**dict(zip(names, args)))
    else:
        values = [np.asarray(v) for v in input_values]
        grads = [np.asarray(g) for g in grad_values]
        call = function
    for which, grad in enumerate(grads):
        if grad.shape != values[which].shape:
            raise AssertionError(
                f"the gradient of argument {which} has shape {grad.shape}, the argument "
                f"{values[which].shape}"
            )
        numeric = np.zeros(grad.shape, dtype="float64")
        for index in np.ndindex(grad.shape):
            sides = []
            for step in (delta, -delta):
                moved = [v.copy() for v in values]
                moved[which][index] += step
                sides.append(float(call(*moved)))
            numeric[index] = (sides[0] - sides[1]) / (2 * delta)
        distance = float(np.sqrt(np.sum((numeric - grad) ** 2)))
        allowed = atol * np.sqrt(grad.size) + rtol * float(np.sqrt(np.sum(numeric**2)))
        if not np.isfinite(distance) or distance > allowed:
            raise AssertionError(
                f"the gradient of argument {which} is {distance:.4g} away from central "
                f"differences (allowed {allowed:.4g}):\n{grad}\nnumeric:\n{numeric}"
            )
