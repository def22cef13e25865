"""The 8-bit floats on the CPU target: every code read, a dense sweep of floats written, in
scalar and vector code, from every source dtype, bit for bit as the reference (and ml_dtypes,
for every value it converts the same way); arithmetic and sums as the reference computes them."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir import dtype as dt
from tests.ir.float8_values import codes, float32_sweep, nearest_even

FLOAT8 = dt.FLOAT8


def _bytes(values) -> np.ndarray:
    return np.asarray(values).view(np.uint8)


def _converter(source: str, target: str, vector: bool):
    """A CPU kernel writing ``P[i].astype(target)`` for a symbolic size, vectorized by 8 (the
    size left over in a scalar tail) where `vector`."""
    n = sl.var("n")
    p = sl.placeholder((n,), source, name="P")
    out = sl.compute((n,), lambda i: p[i].astype(target), name="C")
    s = sl.create_schedule(out)
    if vector:
        _, inner = s[out].split(out.op.axis[0], factor=8)
        s[out].vectorize(inner)
    return sl.build(s, [p, out], target="cpu"), out


def _convert(source: str, target: str, values: np.ndarray, vector: bool) -> np.ndarray:
    kernel, _ = _converter(source, target, vector)
    result = np.asarray(dt.convert(np.full(len(values), np.nan), target))  # poisoned
    kernel(values, result)
    return result


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
@pytest.mark.parametrize("dtype", FLOAT8)
def test_every_code_widens_exactly(dtype, vector):
    values = np.concatenate([codes(dtype), codes(dtype)[:13]])  # a size no multiple of 8
    want = values.astype(np.float32)
    for target in ("float32", "float64", "float16"):
        got = _convert(dtype, target, values, vector)
        np.testing.assert_array_equal(got, want.astype(dt.to_numpy(target)), err_msg=target)
        numbers = ~np.isnan(want)  # (a NaN's sign means nothing)
        assert (np.signbit(got) == np.signbit(want))[numbers].all(), target


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
@pytest.mark.parametrize("dtype", FLOAT8)
def test_floats_narrow_as_ptx_cvt_satfinite(dtype, vector):
    values = float32_sweep(dtype)
    got = _convert("float32", dtype, values, vector)
    np.testing.assert_array_equal(_bytes(got), nearest_even(values, dtype))
    finite = np.abs(values) <= dt.max_value(dtype)  # where ml_dtypes saturates nothing
    np.testing.assert_array_equal(_bytes(got)[finite], _bytes(values[finite].astype(got.dtype)))


@pytest.mark.parametrize("dtype", FLOAT8)
def test_doubles_round_once(dtype):
    """A double just past a tie rounds away from it (rounding to float first would put it on
    the tie, then to even)."""
    sweep = float32_sweep(dtype)
    with np.errstate(invalid="ignore"):
        wide = sweep.astype(np.float64)
        values = np.concatenate([wide * (1 + 2.0**-30), wide * (1 - 2.0**-30), wide])
    for vector in (False, True):
        got = _convert("float64", dtype, values, vector)
        np.testing.assert_array_equal(_bytes(got), nearest_even(values, dtype))


@pytest.mark.parametrize("dtype", FLOAT8)
def test_other_sources_narrow_as_the_reference(dtype):
    gen = np.random.default_rng(3)
    sources = {
        "float16": (gen.standard_normal(999) * 3000).astype(np.float16),
        "bfloat16": (gen.standard_normal(999) * 9e4).astype(dt.to_numpy("bfloat16")),
        "int32": gen.integers(-70000, 70000, 999).astype(np.int32),
        "uint8": gen.integers(0, 255, 999).astype(np.uint8),
        "int64": gen.integers(-(2**62), 2**62, 999),
        "float8_e4m3fn" if dtype == "float8_e5m2" else "float8_e5m2": None,
    }
    for source, values in sources.items():
        if values is None:
            values = codes(source)
        for vector in (False, True):
            kernel, out = _converter(source, dtype, vector)
            got = np.zeros(len(values), dt.to_numpy(dtype))
            kernel(values, got)
            want = sl.evaluate(out, {out.op.input_tensors[0]: values})
            np.testing.assert_array_equal(_bytes(got), _bytes(want), err_msg=source)


@pytest.mark.parametrize("dtype", FLOAT8)
def test_8_bit_to_integers_saturates(dtype):
    for target in ("int8", "uint8", "int32"):
        got = _convert(dtype, target, codes(dtype), vector=True)
        np.testing.assert_array_equal(got, dt.float_to_int(codes(dtype), target), err_msg=target)


@pytest.mark.parametrize("dtype", FLOAT8)
def test_scaled_products_and_saturating_arithmetic(dtype):
    """``(A * B) * scale`` as Transformer Engine writes it (float32 products of 8-bit values,
    exact there) and arithmetic in the 8-bit dtype, with a symbolic size and NaN-poisoned
    outputs, in scalar and vector code."""
    n = sl.var("n")
    a = sl.placeholder((n,), dtype, name="A")
    b = sl.placeholder((n,), dtype, name="B")
    scale = sl.var("scale", dtype="float32")
    prod = sl.compute((n,), lambda i: a[i].astype("float32") * b[i] * scale, name="P")
    back = sl.compute((n,), lambda i: prod[i].astype(dtype), name="Q")
    mixed = sl.compute((n,), lambda i: a[i] * b[i] - a[i] / 3, name="M")
    gen = np.random.default_rng(11)
    size = 1003
    va = dt.to_float8(gen.standard_normal(size) * 60, dtype)
    vb = dt.to_float8(gen.standard_normal(size) * 60, dtype)
    for vector in (False, True):
        s = sl.create_schedule([back, mixed])
        for t in (prod, back, mixed):
            if vector:
                _, inner = s[t].split(t.op.axis[0], factor=16)
                s[t].vectorize(inner)
        kernel = sl.build(s, [a, b, scale, prod, back, mixed], target="cpu")
        poison = np.full(size, np.nan, np.float32)
        outs = [poison.astype(dt.to_numpy(t.dtype)) for t in (prod, back, mixed)]
        kernel(va, vb, np.float32(0.37), *outs)
        want = sl.reference([prod, back, mixed], {a: va, b: vb, scale: np.float32(0.37)})
        for got, w, name in zip(outs, want, "PQM"):
            np.testing.assert_array_equal(_bytes(got), _bytes(w), err_msg=name)
        exact = va.astype(np.float32) * vb.astype(np.float32)
        np.testing.assert_array_equal(outs[0], exact * np.float32(0.37))


@pytest.mark.parametrize("dtype", FLOAT8)
def test_sums_in_8_bits_match_the_reference(dtype):
    n = sl.var("n")
    p = sl.placeholder((5, n), dtype, name="P")
    k = sl.reduce_axis((0, n), name="k")
    total = sl.compute((5,), lambda i: sl.sum(p[i, k], axis=k), name="S")
    values = dt.to_float8(np.abs(np.random.default_rng(5).standard_normal((5, 45))) * 30, dtype)
    s = sl.create_schedule(total)
    kernel = sl.build(s, [p, total], target="cpu")
    got = np.full(5, np.nan, np.float32).astype(dt.to_numpy(dtype))
    kernel(values, got)
    np.testing.assert_array_equal(_bytes(got), _bytes(sl.evaluate(total, {p: values})))


@pytest.mark.parametrize("dtype", FLOAT8)
def test_a_copy_moves_bytes_as_they_are(dtype):
    """Every code, the NaN with its sign bit set (``0xFF``) too, survives a copy unchanged, as
    in the reference; arithmetic gives the one NaN 0x7F."""
    n = sl.var("n")
    p = sl.placeholder((n,), dtype, name="P")
    copy = sl.compute((n,), lambda i: p[i], name="C")
    kernel = sl.build(sl.create_schedule(copy), [p, copy], target="cpu")
    got = np.zeros(256, dt.to_numpy(dtype))
    kernel(codes(dtype), got)
    np.testing.assert_array_equal(_bytes(got), np.arange(256, dtype=np.uint8))


@pytest.mark.parametrize("dtype", FLOAT8)
def test_torch_float8_tensors_pass_through_dlpack(dtype):
    """torch exports its float8 tensors with DLPack's float8 codes (its array interfaces have
    no name for them): they are taken without a copy, outputs are allocated as torch tensors
    of the dtype, and schedlang's arrays of the dtype export the same codes back."""
    torch = pytest.importorskip("torch")
    kind = getattr(torch, dtype)
    n = sl.var("n")
    a = sl.placeholder((n,), dtype, name="A")
    tripled = sl.compute((n,), lambda i: a[i] * 3, name="T")
    wide = sl.compute((n,), lambda i: a[i].astype("float32"), name="W")
    kernel = sl.build(sl.create_schedule([tripled, wide]), [a, tripled, wide], target="cpu")
    given = (torch.randn(41) * 40).to(kind)
    got_tripled, got_wide = kernel(given)
    assert (got_tripled.dtype, got_wide.dtype) == (kind, torch.float32)
    host = given.view(torch.uint8).numpy().view(dt.to_numpy(dtype))
    want = sl.reference([tripled, wide], {a: host})
    np.testing.assert_array_equal(got_tripled.view(torch.uint8).numpy(), _bytes(want[0]))
    np.testing.assert_array_equal(got_wide.numpy(), want[1])
    assert torch.from_dlpack(sl.array(host, device="cpu")).dtype == kind
