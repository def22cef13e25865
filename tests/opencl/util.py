"""Running OpenCL kernels against the reference: built once, called on random inputs with
NaN-poisoned outputs. The tests that run kernels skip where pyopencl finds no device (pocl,
from the ``opencl`` extra, is one on any CPU)."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.platform_info import opencl_choice
from schedlang.runtime.opencl.device import opencl_available
from tests.schedule.util import random_inputs

needs_device = pytest.mark.skipif(not opencl_available(), reason=opencl_choice()[1])


def check_opencl(s, inputs, outputs, sizes=None, given=None, exact=False, kernel=None):
    """Build `s` for opencl (or use `kernel`), run it on random inputs (with `given` arrays
    for the inputs random floats do not fit) at `sizes`, compare with the reference; the
    kernel, for calling again."""
    sizes = dict(sizes or {})
    given = dict(given or {})
    if kernel is None:
        kernel = sl.build(s, list(inputs) + list(outputs), target="opencl")
    values = {**random_inputs([p for p in inputs if p not in given], sizes), **given}
    wants = [sl.evaluate(t, values) for t in outputs]
    results = [_poisoned(want) for want in wants]
    kernel(*[values[p] for p in inputs], *results)
    for got, want in zip(results, wants):
        if exact:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5)
    return kernel


def _poisoned(want: np.ndarray) -> np.ndarray:
    if want.dtype.kind == "f" or want.dtype.name == "bfloat16":
        return np.full(want.shape, np.nan, want.dtype)
    return np.full(want.shape, 123, want.dtype)  # a value no test's output takes everywhere
