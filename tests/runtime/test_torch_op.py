"""Kernels registered as torch operators (`runtime.torch_op`): values against the reference,
torch's own operator checks (schema, fake tensors, dynamic shapes), ``torch.compile`` with no
graph break, functions that build a kernel per shape/dtype, and the registration's errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import schedlang as sl

torch = pytest.importorskip("torch")

_names = itertools.count()


def _name(what: str) -> str:
    """A fresh operator name: torch keeps a registration for the whole process."""
    return f"sltest::{what}{next(_names)}"


def _scale_and_shift():
    """Two outputs of symbolic shapes, one of them shorter than the input (n - 2)."""
    n, m = sl.var("n"), sl.var("m")
    a = sl.placeholder((n, m), name="A")
    b = sl.placeholder((m,), name="B")
    c = sl.compute((n, m), lambda i, j: a[i, j] * b[j], name="C")
    d = sl.compute((n - 2,), lambda i: a[i, 0] + a[i + 2, m - 1], name="D")
    s = sl.create_schedule([c.op, d.op])
    s[c].parallel(c.op.axis[0])
    return (a, b, c, d), sl.build(s, [a, b, c, d])


def _inputs(n, m):
    rng = np.random.default_rng(n * 100 + m)
    return torch.from_numpy(rng.random((n, m), np.float32)), torch.from_numpy(
        rng.random(m, np.float32)
    )


def _expected(tensors, x, y):
    a, b, c, d = tensors
    return sl.reference([c, d], {a: x.numpy(), b: y.numpy()})


@pytest.mark.parametrize(("n", "m"), [(5, 3), (9, 1), (33, 17)])
def test_an_operator_returns_the_outputs_of_its_kernel(n, m):
    tensors, kernel = _scale_and_shift()
    op = sl.torch_op(_name("scale"), kernel)
    x, y = _inputs(n, m)
    c, d = op(x, y)
    want_c, want_d = _expected(tensors, x, y)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-6)
    np.testing.assert_allclose(d.numpy(), want_d, rtol=1e-6)
    assert d.shape == (n - 2,)


def test_the_operator_is_found_under_torch_ops_and_takes_strided_tensors():
    tensors, kernel = _scale_and_shift()
    name = _name("strided")
    sl.torch_op(name, kernel)
    namespace, short = name.split("::")
    x, y = _inputs(8, 6)
    transposed = x.t().contiguous().t()  # the same values, column-major
    c, d = getattr(getattr(torch.ops, namespace), short)(transposed, y)
    want_c, want_d = _expected(tensors, x, y)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-6)
    np.testing.assert_allclose(d.numpy(), want_d, rtol=1e-6)


def test_the_schema_names_the_kernels_inputs():
    _, kernel = _scale_and_shift()
    op = sl.torch_op(_name("schema"), kernel)
    assert str(op._opoverload._schema).endswith("(Tensor A, Tensor B) -> (Tensor, Tensor)")


@pytest.mark.parametrize(("n", "m"), [(5, 3), (12, 7)])
def test_opcheck_passes_every_test(n, m):
    _, kernel = _scale_and_shift()
    op = sl.torch_op(_name("checked"), kernel)
    results = torch.library.opcheck(op, _inputs(n, m))
    assert set(results) == {
        "test_schema",
        "test_autograd_registration",
        "test_faketensor",
        "test_aot_dispatch_dynamic",
    }
    assert all(result == "SUCCESS" for result in results.values())


def test_fake_tensors_get_the_shapes_the_algorithm_gives():
    from torch._subclasses.fake_tensor import FakeTensorMode

    _, kernel = _scale_and_shift()
    op = sl.torch_op(_name("fake"), kernel)
    calls = []
    kernel_call = type(kernel).__call__
    with FakeTensorMode() as mode:
        x, y = mode.from_tensor(torch.rand(11, 4)), mode.from_tensor(torch.rand(4))
        type(kernel).__call__ = lambda *a, **k: calls.append(a) or kernel_call(*a, **k)
        try:
            c, d = op(x, y)
        finally:
            type(kernel).__call__ = kernel_call
    assert (tuple(c.shape), tuple(d.shape)) == ((11, 4), (9,))
    assert c.dtype == d.dtype == torch.float32
    assert calls == []  # shapes from the algorithm: the kernel never ran


@pytest.mark.parametrize("dynamic", [False, True])
def test_torch_compile_keeps_the_operator_in_one_graph(dynamic):
    tensors, kernel = _scale_and_shift()
    op = sl.torch_op(_name("compiled"), kernel)

    def program(x, y):
        c, d = op(x * 2, y)
        return c + 1, d.sum()

    compiled = torch.compile(program, fullgraph=True, backend="aot_eager", dynamic=dynamic)
    for n, m in [(6, 4), (10, 5)]:
        x, y = _inputs(n, m)
        c, total = compiled(x, y)
        want_c, want_d = _expected(tensors, x * 2, y)
        np.testing.assert_allclose(c.numpy(), want_c + 1, rtol=1e-6)
        np.testing.assert_allclose(total.item(), want_d.sum(), rtol=1e-5)


def _adder(x, y):
    dtype = str(x.dtype).removeprefix("torch.")
    a = sl.placeholder(tuple(x.shape), dtype, name="X")
    b = sl.placeholder(tuple(y.shape), dtype, name="Y")
    c = sl.compute(a.shape, lambda *i: a[i] + b[i], name="Z")
    return (a, b, c), sl.build(sl.create_schedule(c.op), [a, b, c])


def test_a_function_builds_one_kernel_per_shape_and_dtype():
    built = []

    @sl.torch_op(_name("add"))
    def add(x, y):
        tensors, kernel = _adder(x, y)
        built.append((tuple(x.shape), x.dtype))
        return kernel

    for shape, dtype in [((3, 5), torch.float32), ((4,), torch.float64), ((3, 5), torch.float32)]:
        x, y = (torch.rand(shape, dtype=torch.float64).to(dtype) for _ in range(2))
        z = add(x, y)
        assert z.dtype == dtype
        torch.testing.assert_close(z, x + y)
    assert built == [((3, 5), torch.float32), ((4,), torch.float64)]
    assert torch.library.opcheck(add, (torch.rand(2, 3), torch.rand(2, 3)))["test_faketensor"] == (
        "SUCCESS"
    )


def test_a_function_declares_how_many_outputs_its_kernels_make():
    def two(x):
        n = sl.var("n")
        a = sl.placeholder((n,), name="A")
        b = sl.compute((n,), lambda i: a[i] + 1, name="B")
        c = sl.compute((n,), lambda i: a[i] * 3, name="C")
        return sl.build(sl.create_schedule([b.op, c.op]), [a, b, c])

    op = sl.torch_op(_name("two"), two, outputs=2)
    x = torch.rand(7)
    b, c = op(x)
    torch.testing.assert_close(b, x + 1)
    torch.testing.assert_close(c, x * 3)
    wrong = sl.torch_op(_name("wrong"), two)  # says one output
    with pytest.raises(
        TypeError,
        match=r"returns 1, but its kernel 'main' has 1 inputs and "
        r"makes 2 outputs",
    ):
        wrong(x)


def test_registration_errors_say_what_is_wrong():
    _, kernel = _scale_and_shift()
    with pytest.raises(ValueError, match="'namespace::name'"):
        sl.torch_op("no_namespace", kernel)
    with pytest.raises(TypeError, match="a kernel or a function returning one, not int"):
        sl.torch_op(_name("number"), 3)
    with pytest.raises(TypeError, match="named positional parameters"):
        sl.torch_op(_name("varargs"), lambda *tensors: kernel)
    with pytest.raises(ValueError, match="outputs= is the number of tensors"):
        sl.torch_op(_name("zero"), lambda x: kernel, outputs=0)


def test_a_kernel_whose_output_size_no_input_gives_is_refused():
    n, k = sl.var("n"), sl.var("k")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n, k), lambda i, j: a[i], name="B")
    kernel = sl.build(sl.create_schedule(b.op), [a, b])
    with pytest.raises(ValueError, match="needs size 'k', which no input's shape gives"):
        sl.torch_op(_name("free"), kernel)


def test_a_kernel_without_inputs_is_refused():
    c = sl.compute((4,), lambda i: i * 2, name="C")
    kernel = sl.build(sl.create_schedule(c.op), [c])
    with pytest.raises(ValueError, match="has no input tensor to call it with"):
        sl.torch_op(_name("constant"), kernel)


def test_a_reduction_returns_its_output():
    n, m = sl.var("n"), sl.var("m")
    a = sl.placeholder((n, m), name="A")
    k = sl.reduce_axis((0, m), "k")
    c = sl.compute((n,), lambda i: sl.sum(a[i, k], axis=k), name="C")
    op = sl.torch_op(_name("rowsum"), sl.build(sl.create_schedule(c.op), [a, c]))
    x = torch.rand(6, 9)
    np.testing.assert_allclose(op(x).numpy(), sl.reference(c, {a: x.numpy()}), rtol=1e-6)


def test_a_function_returning_something_else_than_a_kernel_fails_at_the_call():
    op = sl.torch_op(_name("nothing"), lambda x: None)
    with pytest.raises(TypeError, match="returned NoneType, not a kernel"):
        op(torch.rand(3))
