"""TE's pytest helpers on plain pytest: ``tvm.testing.parameter`` (also ``by_dict``),
``parameters`` (values taken together), ``fixture`` and ``parametrize_targets``, at module and
class level, as TE's own test files use them."""

from __future__ import annotations

import numpy as np

import schedlang.tvm as tvm
import schedlang.tvm.testing  # noqa: F401 - TE's test files import it so
from schedlang.tvm import te

size = tvm.testing.parameter(3, 8)
shape, scale = tvm.testing.parameters(((2, 3), 2.0), ((4,), -1.5))


@tvm.testing.fixture
def doubled(size):
    return 2 * size


def test_a_parameter_takes_each_value_and_feeds_fixtures(size, doubled):
    assert doubled == 2 * size and size in (3, 8)


def test_parameters_are_taken_together(shape, scale):
    assert (shape, scale) in (((2, 3), 2.0), ((4,), -1.5))


class TestInAClass:
    dtype = tvm.testing.parameter(by_dict={"f32": "float32", "f64": "float64"})

    @tvm.testing.fixture
    def data(self, dtype, size):
        return np.arange(size, dtype=dtype)

    @tvm.testing.parametrize_targets("llvm")
    def test_a_built_kernel_per_target(self, target, dev, data, dtype):
        A = te.placeholder((data.size,), name="A", dtype=dtype)
        B = te.compute(A.shape, lambda i: A[i] * 3, name="B")
        f = tvm.build(te.create_schedule(B.op), [A, B], target=target)
        a = tvm.nd.array(data, dev)
        b = tvm.nd.empty(data.shape, dtype, dev)
        f(a, b)
        np.testing.assert_allclose(b.numpy(), data * 3)


def test_every_value_of_the_parameter_is_a_test_of_its_own(request):
    """Each value is a test of its own, whichever worker of ``pytest -n`` runs it (a list
    filled by the runs is empty in a worker that ran none)."""
    runs = [
        item.callspec.params["size"]
        for item in request.node.parent.collect()  # this module's tests, whatever -k selects
        if getattr(item, "originalname", "")
        == "test_a_parameter_takes_each_value_and_feeds_fixtures"
    ]
    assert sorted(runs) == [3, 8]
