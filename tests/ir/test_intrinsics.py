"""Math functions called by their C names (`sl.call_pure_extern`), intrinsics schedlang has
no code for (`sl.call_intrin`), and rules that lower calls per target
(`sl.register_intrin_lowering`): results against numpy on random data, the code each target
gets, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.nvptx import libdevice
from schedlang.ir import intrinsics

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def no_rules(monkeypatch):
    """Rules are process-wide, as TE's: each test starts with none and leaves none."""
    monkeypatch.setattr(intrinsics, "_RULES", {})


def _elementwise(f, target="cpu"):
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute(a.shape, lambda i: f(a[i]), name="B")
    s = sl.create_schedule(b.op)
    if target == "cuda":
        bx, tx = s[b].split(b.op.axis[0], factor=64)
        s[b].bind(bx, "blockIdx.x")
        s[b].bind(tx, "threadIdx.x")
    return a, b, sl.build(s, [a, b], target=target)


def _run(kernel, length=37):
    x = RNG.uniform(0.1, 2.0, length).astype("float32")
    y = np.full(length, np.nan, "float32")
    kernel(x, y)
    return x, y


def test_c_math_functions_on_the_cpu_match_the_reference():
    def f(v):
        return sl.call_pure_extern("float32", "log1pf", v) * sl.call_pure_extern(
            "float32", "powf", v, 1.5
        )

    a, b, kernel = _elementwise(f)
    x, y = _run(kernel)
    np.testing.assert_allclose(y, np.log1p(x) * x**1.5, rtol=1e-5)
    np.testing.assert_allclose(y, sl.reference(b, {a: x}), rtol=1e-5)
    assert '@"log1pf"' in kernel.llvm_ir and '@"powf"' in kernel.llvm_ir


def test_names_schedlang_does_not_know_or_the_cpu_has_not_are_refused():
    with pytest.raises(sl.AlgorithmError, match="does not know the math function 'sinpif'"):
        sl.call_pure_extern("float32", "sinpif", sl.const(1.0))
    with pytest.raises(sl.LoweringError, match="'__expf' is one of CUDA's fast math .* 'expf'"):
        _elementwise(lambda v: sl.call_pure_extern("float32", "__expf", v))


@pytest.mark.skipif(libdevice.find() is None, reason="NVIDIA's libdevice is not installed here")
def test_cuda_names_call_libdevice_and_its_fast_versions():
    _, _, fast = _elementwise(lambda v: sl.call_pure_extern("float32", "__expf", v), "cuda")
    _, _, exact = _elementwise(lambda v: sl.call_pure_extern("float32", "expf", v), "cuda")
    for kernel in (fast, exact):
        assert ".extern .func" not in kernel.ptx  # libdevice linked in, nothing left to resolve
    assert "ex2.approx" in fast.ptx  # __nv_fast_expf: the approximate instruction
    assert exact.ptx.count("fma.rn") > fast.ptx.count("fma.rn")  # __nv_expf: a range reduction


def test_a_rule_replaces_a_math_call_for_its_target_only():
    sl.register_intrin_lowering(
        "exp", target="cpu", f=lambda call: sl.call_pure_extern("float32", "expm1f", *call.args) + 1
    )
    a, b, kernel = _elementwise(sl.exp)
    assert '@"expm1f"' in kernel.llvm_ir
    x, y = _run(kernel)
    np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)
    assert intrinsics.lowering_rule("exp", "cuda") is None


def test_the_highest_level_wins_and_returning_the_call_keeps_it():
    sl.register_intrin_lowering(
        "exp", "cpu", lambda c: sl.call_pure_extern("float32", "expf", *c.args), 5
    )
    sl.register_intrin_lowering("exp", "cpu", lambda c: c, 50)
    _, _, kernel = _elementwise(sl.exp)
    assert '@"expf"' not in kernel.llvm_ir  # the level-50 rule kept the call: LLVM's intrinsic
    assert "llvm.exp" in kernel.llvm_ir


def test_an_intrinsic_needs_a_rule():
    def mylog(v):
        return sl.call_intrin("float32", "mylog", v)

    with pytest.raises(sl.LoweringError, match="'mylog' .* no lowering rule for the cpu target"):
        _elementwise(mylog)
    sl.register_intrin_lowering("mylog", "cpu", lambda c: sl.log(c.args[0]) * 2.0)
    a, b, kernel = _elementwise(mylog)
    x, y = _run(kernel)
    np.testing.assert_allclose(y, 2 * np.log(x), rtol=1e-5)
    with pytest.raises(sl.AlgorithmError, match="'mylog' .* has no reference"):
        sl.reference(b, {a: x})


def test_a_rule_must_return_an_expression_of_the_calls_dtype():
    sl.register_intrin_lowering("exp", "cpu", lambda c: c.args[0].astype("float64"))
    with pytest.raises(sl.LoweringError, match="returned .* a rule returns an expression of the"):
        _elementwise(sl.exp)


def test_registered_rules_are_part_of_a_builds_key():
    before = intrinsics.rules_fingerprint()
    sl.register_intrin_lowering("exp", "cpu", lambda c: c)
    after = intrinsics.rules_fingerprint()
    assert before == "" and after != before
    sl.register_intrin_lowering("exp", "cpu", lambda c: c.args[0], level=11)
    assert intrinsics.rules_fingerprint() != after

    def scaled(factor):
        return lambda c: c.args[0] * factor

    prints = []
    for factor in (2.0, 3.0):  # the same code, told apart by what its closure holds
        intrinsics._RULES.clear()
        sl.register_intrin_lowering("exp", "cpu", scaled(factor))
        prints.append(intrinsics.rules_fingerprint())
    assert prints[0] != prints[1]


def test_named_functions_in_the_gpu_simulator_and_in_vector_loops():
    def f(v):
        return sl.call_pure_extern("float32", "__expf", v) + sl.call_pure_extern(
            "float32", "log1pf", v
        )

    a, b, kernel = _elementwise(f, "cuda")
    x, y = RNG.uniform(0.1, 2.0, 100).astype("float32"), np.full(100, np.nan, "float32")
    kernel.simulate(x, y)
    np.testing.assert_allclose(y, np.exp(x) + np.log1p(x), rtol=1e-6)
    bare = sl.compute(a.shape, lambda i: sl.call_pure_extern("float32", "log1pf", a[i]), name="L")
    s = sl.create_schedule(bare.op)
    _, lanes = s[bare].split(bare.op.axis[0], factor=8)
    s[bare].vectorize(lanes)
    x, y = _run(sl.build(s, [a, bare]))
    np.testing.assert_allclose(y, np.log1p(x), rtol=1e-6)
