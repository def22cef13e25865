"""Arguments from torch and numpy as their users write them: bfloat16 and autograd tensors,
arrays of another dtype told the conversion of their own library, arrays passed by name."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import schedlang as sl

torch = pytest.importorskip("torch")


def _random(*shape, **options):
    """Seeded random values (a * 3 + 1 fused on the CPU differs from the reference's two
    roundings by an ulp of the terms, so the comparisons allow that much)."""
    values = np.random.default_rng(11).uniform(-2, 2, shape).astype(np.float32)
    return torch.tensor(values, **options)


def _scale(dtype: str):
    n = sl.var("n")
    A = sl.placeholder((n,), dtype, name="A")
    B = sl.compute((n,), lambda i: A[i] * 3.0 + 1.0, name="B")
    return sl.build(sl.create_schedule(B), [A, B]), A, B


def test_bfloat16_tensors_in_and_out_of_a_bfloat16_kernel():
    kernel, A, B = _scale("bfloat16")
    a = _random(37, dtype=torch.bfloat16)
    b = torch.empty(37, dtype=torch.bfloat16)
    kernel(a, b)
    expected = sl.evaluate(B, {A: a.float().numpy().astype(ml_dtypes.bfloat16)})
    np.testing.assert_array_equal(b.float().numpy(), expected.astype(np.float32))
    made = kernel(a[::2])  # a strided view is read through its strides
    assert made.dtype == torch.bfloat16 and made.shape == (19,)
    np.testing.assert_array_equal(made.float().numpy(), b.float().numpy()[::2])


def test_bfloat16_tensor_for_a_float32_kernel():
    kernel, _, _ = _scale("float32")
    a = _random(37, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match=r"'A' must have dtype float32, got bfloat16: .*\.to\("):
        kernel(a, torch.empty(37))


def test_an_input_that_requires_grad_is_read_in_place():
    kernel, A, B = _scale("float32")
    a = _random(37, requires_grad=True)
    b = torch.empty(37)
    kernel(a, b)
    np.testing.assert_allclose(b.numpy(), sl.evaluate(B, {A: a.detach().numpy()}), atol=1e-6)
    assert kernel(a * 2.0).shape == (37,)  # a non-leaf too
    assert a.grad is None


def test_an_output_that_requires_grad():
    kernel, _, _ = _scale("float32")
    a = _random(37)
    b = torch.zeros(37, requires_grad=True)
    match = r"'B' is an output that requires grad.*torch.no_grad\(\).*B.detach\(\)"
    with pytest.raises(ValueError, match=match):
        kernel(a, b)
    with torch.no_grad():
        kernel(a, b)  # as an optimizer step writes a parameter
    np.testing.assert_allclose(b.detach().numpy(), a.numpy() * 3 + 1, atol=1e-6)
    (b * 2.0).sum().backward()  # still a parameter autograd can use
    np.testing.assert_array_equal(b.grad.numpy(), np.full(37, 2.0, np.float32))


def test_an_output_of_another_dtype_is_told_to_allocate():
    kernel, _, _ = _scale("float32")
    a = np.random.default_rng(1).random(37, np.float32)
    match = r"'B' must have dtype float32, got int32: it is an output.*np.empty\(shape, dtype="
    with pytest.raises(TypeError, match=match):
        kernel(a, np.empty(37, np.int32))
    match = r"'B' must have dtype float32, got int32: .*torch.empty\(shape, dtype=torch.float32\)"
    with pytest.raises(TypeError, match=match):
        kernel(torch.from_numpy(a), torch.empty(37, dtype=torch.int32))


def test_a_torch_input_of_another_dtype_is_told_to_use_to():
    kernel, _, _ = _scale("float32")
    with pytest.raises(TypeError, match=r"got float64: convert it with .to\(torch.float32\)$"):
        kernel(torch.ones(37, dtype=torch.float64), torch.empty(37))


def test_arrays_passed_by_name():
    kernel, _, _ = _scale("float32")
    a, b = np.ones(37, np.float32), np.empty(37, np.float32)
    match = r"takes its arrays by position, in the order of args: kernel\(A, B\); 'A' was passed"
    with pytest.raises(TypeError, match=match):
        kernel(A=a, B=b)
    with pytest.raises(TypeError, match=r"'B' was passed by name"):
        kernel(a, B=b)


def test_a_host_tensor_of_a_type_no_dtype_stores():
    kernel, _, _ = _scale("float32")
    a = torch.zeros(37, dtype=torch.float8_e4m3fnuz)  # (the "fn" variant is a schedlang dtype)
    with pytest.raises(TypeError, match=r"'A' has the DLPack element type code 11 with 8 bits"):
        kernel(a, np.empty(37, np.float32))
