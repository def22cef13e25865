"""``tvm.testing.plugin``, which TVM's test tree loads from its conftest.py: a test taking
`target` and `dev` runs once per target usable here (the CPU's at least), on that device."""

from __future__ import annotations

import numpy as np

import schedlang.tvm as tvm
from schedlang.tvm import te
from schedlang.tvm.pytest_params import enabled_targets
from schedlang.tvm.testing.plugin import dev, target  # noqa: F401 - the plugin's fixtures


def test_a_test_taking_target_and_dev_runs_on_each_usable_target(target, dev):  # noqa: F811
    A = te.placeholder((7,), name="A")
    B = te.compute((7,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    if "cuda" in target:
        xo, xi = s[B].split(B.op.axis[0], factor=4)
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, B], target=target)
    a = np.random.default_rng(0).uniform(-1, 1, 7).astype("float32")
    b = tvm.nd.array(np.full(7, np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a * 2 + 1, rtol=1e-6)


def test_the_cpu_is_always_among_the_targets():
    assert enabled_targets()[0] == "llvm"
