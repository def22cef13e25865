"""``tvm.testing``: numpy's checks on TE arrays, the decorators TE's tests mark themselves
with (which skip, through pytest, what this machine cannot run), and TE's parameters and
fixtures (`pytest_params`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..platform_info import cuda_available, cuda_devices
from .pytest_params import fixture, parameter, parameters, parametrize_targets  # noqa: F401
from .runtime import NDArray
from .target import CPU_KINDS, CUDA_KINDS


def assert_allclose(
    actual: object, desired: object, rtol: float = 1e-7, atol: float = 0.0, verbose: bool = True
) -> None:
    """numpy's ``assert_allclose``, on NDArrays as on numpy arrays."""
    np.testing.assert_allclose(
        _values(actual), _values(desired), rtol=rtol, atol=atol, verbose=verbose
    )


def device_enabled(target: object) -> bool:
    """Whether `target` can run here: the CPU always, CUDA where a GPU is usable."""
    kind = str(target).split()[0] if str(target).split() else ""
    if kind in (*CPU_KINDS, "cpu"):
        return True
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
