"""Compiled code computes what the reference evaluator computes, bit for bit where the math
library allows it: the cases of the interpreter's semantics test, as scalar, vectorized (with a
tail) and parallel loops."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from schedlang.runtime.kernel import Kernel
from tests.loopir.test_semantics import CASES, INPUTS, N, _inputs, _same, lower_elementwise

from .elementwise import parallel_elementwise, split_elementwise

# Cases calling libm may differ from numpy in the last bit (of their dtype).
LIBM_RTOL = {"float16 math": 2e-3, "bfloat16 math": 1e-2, "fma pow erf": 1e-6}

SHAPES = {
    "scalar": lower_elementwise,
    "vector8": lambda c: split_elementwise(c, 8),
    "vector3": lambda c: split_elementwise(c, 3),
    "parallel": parallel_elementwise,
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_matches_reference(name, shape):
    C = sl.compute((N,), CASES[name], name="C")
    func = SHAPES[shape](C)
    arrays = _inputs(37)
    want = sl.evaluate(C, dict(zip(INPUTS, arrays)))
    got = np.zeros(37, dt.to_numpy(C.dtype))
    Kernel.for_cpu(func)(*arrays, got)
    if name in LIBM_RTOL:
        wide = got.astype("float64"), want.astype("float64")
        np.testing.assert_allclose(*wide, rtol=LIBM_RTOL[name], atol=1e-6)
    else:
        assert _same(got, want), f"{name}: {got} != {want}"
