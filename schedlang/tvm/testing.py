"""``tvm.testing``: numpy's checks on TE arrays."""

from __future__ import annotations

import numpy as np

from ..platform_info import cuda_available
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
