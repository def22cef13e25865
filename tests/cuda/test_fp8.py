"""The 8-bit floats on the CUDA target: PTX's own conversions (``cvt.rn.satfinite.e4m3x2.f32``,
``cvt.rn.f16x2.e4m3x2``) accepted by ptxas for sm_89 and sm_90, older GPUs refused before
anything runs, and on a GPU the reference's values bit for bit (numpy arrays and torch's float8
tensors alike)."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from tests.ir.float8_values import codes, float32_sweep, nearest_even
from tests.schedule.test_gpu_schedules import bind

from .ptxas import assemble

FLOAT8 = dt.FLOAT8
PTX_NAME = {"float8_e4m3fn": "e4m3x2", "float8_e5m2": "e5m2x2"}


def _bytes(values) -> np.ndarray:
    return np.asarray(values).view(np.uint8)


def _gpu_schedule(s, out, lanes: int | None = None) -> None:
    """One thread per element (per `lanes` elements, vectorized, where given)."""
    xo, xi = s[out].split(out.op.axis[0], factor=128 * (lanes or 1))
    if lanes:
        xi, vi = s[out].split(xi, factor=lanes)
        s[out].vectorize(vi)
    bind(s, out, (xo, "blockIdx.x"), (xi, "threadIdx.x"))


def _converter(source: str, target: str, arch: str = "sm_90", lanes: int | None = None):
    n = sl.var("n")
    p = sl.placeholder((n,), source, name="P")
    out = sl.compute((n,), lambda i: p[i].astype(target), name="C")
    s = sl.create_schedule(out)
    _gpu_schedule(s, out, lanes)
    return sl.build(s, [p, out], target=f"cuda -arch={arch}")


@pytest.mark.parametrize("lanes", [None, 4], ids=["scalar", "vector"])
@pytest.mark.parametrize("arch", ["sm_89", "sm_90"])
@pytest.mark.parametrize("dtype", FLOAT8)
def test_conversions_are_ptx_cvt_accepted_by_ptxas(dtype, arch, lanes):
    narrow = _converter("float32", dtype, arch, lanes)
    wide = _converter(dtype, "float32", arch, lanes)
    assert f"cvt.rn.satfinite.{PTX_NAME[dtype]}.f32" in narrow.ptx
    assert f"cvt.rn.f16x2.{PTX_NAME[dtype]}" in wide.ptx
    assert ".version 8.1" in narrow.ptx if arch == "sm_89" else ".version 8.0" in narrow.ptx
    for kernel in (narrow, wide):
        assemble(kernel.ptx)


@pytest.mark.parametrize("arch", ["sm_80", "sm_86"])
def test_gpus_before_sm_89_are_refused_before_anything_runs(arch):
    with pytest.raises(sl.LoweringError, match=rf"float8_e4m3fn needs sm_89 or newer.*{arch}"):
        _converter("float32", "float8_e4m3fn", arch)
    n = sl.var("n")
    p = sl.placeholder((n,), "float32", name="P")
    rounded = sl.compute((n,), lambda i: p[i].astype("float8_e5m2").astype("float32"), name="R")
    s = sl.create_schedule(rounded)
    _gpu_schedule(s, rounded)
    with pytest.raises(sl.LoweringError, match="float8_e5m2 needs sm_89 or newer"):
        sl.build(s, [p, rounded], target=f"cuda -arch={arch}")


def _scaled_products(dtype: str, lanes: int | None):
    """``(A * B * scale)`` in float32 (products of 8-bit values are exact there), rounded back
    to the 8-bit dtype, and arithmetic in the 8-bit dtype."""
    n = sl.var("n")
    a = sl.placeholder((n,), dtype, name="A")
    b = sl.placeholder((n,), dtype, name="B")
    scale = sl.var("scale", dtype="float32")
    prod = sl.compute((n,), lambda i: a[i].astype("float32") * b[i] * scale, name="P")
    back = sl.compute((n,), lambda i: prod[i].astype(dtype), name="Q")
    mixed = sl.compute((n,), lambda i: a[i] * b[i] - a[i] / 3, name="M")
    s = sl.create_schedule([back, mixed])
    for t in (prod, back, mixed):
        _gpu_schedule(s, t, lanes)
    kernel = sl.build(s, [a, b, scale, prod, back, mixed], target="cuda")
    return kernel, (a, b, scale), (prod, back, mixed)


@pytest.mark.parametrize("dtype", FLOAT8)
def test_scaled_product_kernels_assemble(dtype):
    for lanes in (None, 4):
        kernel, _, _ = _scaled_products(dtype, lanes)
        assemble(kernel.ptx)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("lanes", [None, 4], ids=["scalar", "vector"])
@pytest.mark.parametrize("dtype", FLOAT8)
def test_gpu_conversions_match_the_reference_bit_for_bit(dtype, lanes):
    values = float32_sweep(dtype)
    narrow = np.asarray(dt.convert(np.full(len(values), np.nan), dtype))  # poisoned
    _converter("float32", dtype, lanes=lanes)(values, narrow)
    np.testing.assert_array_equal(_bytes(narrow), nearest_even(values, dtype))
    with np.errstate(invalid="ignore"):
        doubles = values.astype(np.float64) * (1 + 2.0**-30)
    narrow = np.asarray(dt.convert(np.full(len(values), np.nan), dtype))
    _converter("float64", dtype, lanes=lanes)(doubles, narrow)
    np.testing.assert_array_equal(_bytes(narrow), nearest_even(doubles, dtype))
    wide = np.full(256, np.nan, np.float32)
    _converter(dtype, "float32", lanes=lanes)(codes(dtype), wide)
    np.testing.assert_array_equal(wide, codes(dtype).astype(np.float32))


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("lanes", [None, 4], ids=["scalar", "vector"])
@pytest.mark.parametrize("dtype", FLOAT8)
def test_gpu_scaled_products_match_the_reference(dtype, lanes):
    kernel, (a, b, scale), outs = _scaled_products(dtype, lanes)
    gen = np.random.default_rng(11)
    size = 1003
    va = dt.to_float8(gen.standard_normal(size) * 60, dtype)
    vb = dt.to_float8(gen.standard_normal(size) * 60, dtype)
    poison = np.full(size, np.nan)
    got = [np.asarray(dt.convert(poison, t.dtype)) for t in outs]
    kernel(va, vb, np.float32(0.37), *got)
    want = sl.reference(list(outs), {a: va, b: vb, scale: np.float32(0.37)})
    for g, w, t in zip(got, want, outs):
        np.testing.assert_array_equal(_bytes(g), _bytes(w), err_msg=t.name)


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
@pytest.mark.parametrize("dtype", FLOAT8)
def test_gpu_takes_and_returns_torch_float8_tensors(dtype):
    torch = pytest.importorskip("torch")
    kernel, (a, b, scale), outs = _scaled_products(dtype, lanes=None)
    kind = getattr(torch, dtype)
    ta = (torch.randn(1003, device="cuda") * 60).to(kind)
    tb = (torch.randn(1003, device="cuda") * 60).to(kind)
    got = kernel(ta, tb, 0.37)
    assert [g.dtype for g in got] == [torch.float32, kind, kind]
    assert all(g.is_cuda for g in got)
    host = [t.view(torch.uint8).cpu().numpy().view(dt.to_numpy(dtype)) for t in (ta, tb)]
    want = sl.reference(list(outs), {a: host[0], b: host[1], scale: np.float32(0.37)})
    for g, w, t in zip(got, want, outs):
        raw = g.view(torch.uint8) if g.dtype == kind else g.view(torch.int32)
        np.testing.assert_array_equal(raw.cpu().numpy(), w.view(raw.cpu().numpy().dtype), t.name)
