"""schedlang's own float math (`softmath`), the CUDA target's where libdevice is missing: every
function on the host JIT against a wider reference with an ulp bound, the special values
exactly as numpy has them, and CUDA builds that use it (ptxas-checked) or refuse float64
pow."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.nvptx import compile as nvptx_compile
from schedlang.codegen.nvptx import softmath
from schedlang.codegen.nvptx.softmath import host
from schedlang.codegen.nvptx.softmath.accuracy import reference, ulp_error
from tests.cuda.ptxas import assemble

UNARY = [f for f in softmath.FUNCTIONS if f != "pow"]
# What docs/math.md promises: float32 correctly rounded up to the references' own error,
# float64 within an ulp.
BOUND = {"float32": 0.501, "float64": 1.0}


def special_values(dtype: str) -> np.ndarray:
    info = np.finfo(dtype)
    values = [
        0.0,
        1.0,
        0.5,
        2.0,
        np.pi / 2,
        np.pi,
        1e4,
        info.max,
        info.tiny,
        info.smallest_subnormal,
        3 * info.smallest_subnormal,
        np.inf,
        np.nan,
    ]
    with np.errstate(over="ignore"):
        values = np.array(values).astype(dtype)
    return np.concatenate([values, -values])


def points(name: str, dtype: str, n: int = 4000) -> np.ndarray:
    """Random bit patterns (every exponent), the working interval, and the special values."""
    gen = np.random.default_rng(11)
    width = np.uint32 if dtype == "float32" else np.uint64
    bits = gen.integers(0, np.iinfo(width).max, n // 2, dtype=width, endpoint=True)
    scale = {"exp": 100.0, "exp2": 140.0, "log": 4.0, "log2": 4.0}.get(name, 10.0)
    interval = gen.uniform(-scale, scale, n // 2)
    return np.concatenate([bits.view(dtype), interval.astype(dtype), special_values(dtype)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_function_is_within_its_ulp_bound(name, dtype):
    x = points(name, dtype)
    with np.errstate(all="ignore"):
        error = ulp_error(host.function(name, dtype)(x), reference(name, dtype)(x))
    worst = int(np.argmax(error))
    assert error[worst] <= BOUND[dtype], f"{name}({x[worst]!r}): {error[worst]} ulp"


def test_pow_is_within_its_ulp_bound_and_follows_c99_special_cases():
    gen = np.random.default_rng(5)
    x = np.exp2(gen.uniform(-126, 127, 3000)).astype(np.float32)
    y = (gen.uniform(-120, 120, 3000) / np.maximum(np.abs(np.log2(x)), 1e-3)).astype(np.float32)
    s = np.concatenate([special_values("float32"), np.float32([-1, 3, -3, 0.25, -2.5])])
    sx, sy = (g.ravel() for g in np.meshgrid(s, s))
    negative_x = -np.exp2(gen.uniform(-8, 8, 1000)).astype(np.float32)
    integer_y = np.round(gen.uniform(-20, 20, 1000)).astype(np.float32)
    x = np.concatenate([x, sx, negative_x])
    y = np.concatenate([y, sy, integer_y])
    with np.errstate(all="ignore"):
        error = ulp_error(host.function("pow", "float32")(x, y), reference("pow", "float32")(x, y))
    worst = int(np.argmax(error))
    assert error[worst] <= BOUND["float32"], f"pow({x[worst]!r}, {y[worst]!r}): {error[worst]}"


def test_ulp_error_counts_a_wrong_special_or_last_bit():
    exact = np.array([1.0, 0.0, np.inf, np.nan])
    assert list(ulp_error(np.float32([1.0, 0.0, np.inf, np.nan]), exact)) == [0, 0, 0, 0]
    wrong = np.float32([np.nextafter(np.float32(1), np.float32(2)), -0.0, 3e38, 0.0])
    assert list(ulp_error(wrong, exact)) == [1.0, np.inf, np.inf, np.inf]


def test_large_arguments_of_sin_and_cos_are_reduced_exactly():
    """A double close to a multiple of pi/2 (its remainder is about 2**-61 x), and every
    exponent up to the largest double."""
    x = np.array([6381956970095103 * 2.0**797, 2.0**1023, 1e300, 1e22, 2.0**20, 2.0**20 - 1])
    x = np.concatenate([x, -x])
    for name in ("sin", "cos"):
        error = ulp_error(host.function(name, "float64")(x), reference(name, "float64")(x))
        assert error.max() <= BOUND["float64"], name


def math_kernel(dtype: str, names: list[str], n: int = 64):
    """One kernel computing the sum of `names` applied to A (pow as A ** B)."""
    a = sl.placeholder((n,), dtype=dtype, name="A")
    b = sl.placeholder((n,), dtype=dtype, name="B")

    def body(i):
        terms = [sl.pow(a[i], b[i]) if f == "pow" else getattr(sl, f)(a[i]) for f in names]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    c = sl.compute((n,), body, name="C")
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[0], factor=32)
    s[c].bind(xo, sl.thread_axis("blockIdx.x"))
    s[c].bind(xi, sl.thread_axis("threadIdx.x"))
    inputs = [a, b] if "pow" in names else [a]
    return sl.build(s, [*inputs, c], target="cuda")


@pytest.fixture
def no_libdevice(monkeypatch):
    monkeypatch.setenv("SCHEDLANG_LIBDEVICE", "none")


@pytest.mark.usefixtures("no_libdevice")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cuda_math_without_libdevice_is_defined_in_the_module(dtype):
    names = [*UNARY, "sigmoid", "rsqrt"] + (["pow"] if dtype == "float32" else [])
    ptx = math_kernel(dtype, names).ptx
    assemble(ptx)
    assert ".extern" not in ptx and "__nv_" not in ptx and ".approx" not in ptx
    assert "fma.rn.f64" in ptx
    # ptxas contracts a plain mul and add into an fma; .rn ones it keeps as written
    plain = [op for op in ("add.f64", "sub.f64", "mul.f64", "add.f32", "mul.f32") if op in ptx]
    assert not plain


def test_float64_pow_without_libdevice_is_an_error(no_libdevice):
    with pytest.raises(
        sl.LoweringError,
        match=r"sl.pow in float64 on the cuda target needs NVIDIA's libdevice: schedlang's own "
        r"math, used because SCHEDLANG_LIBDEVICE=none, has no float64 pow; .* or compute it in "
        "float32",
    ):
        math_kernel("float64", ["pow"])


def test_the_cuda_cache_keeps_libdevice_and_softmath_builds_apart(monkeypatch):
    monkeypatch.setattr(nvptx_compile, "_memory", {})
    if nvptx_compile.libdevice.find() is None:
        pytest.skip("no libdevice here to compare with")
    with_libdevice = math_kernel("float32", ["tanh"]).ptx
    monkeypatch.setenv("SCHEDLANG_LIBDEVICE", "none")
    without = math_kernel("float32", ["tanh"]).ptx
    monkeypatch.delenv("SCHEDLANG_LIBDEVICE")
    assert without != with_libdevice
    assert math_kernel("float32", ["tanh"]).ptx == with_libdevice
