"""TE's ``llvm`` target options: those this machine satisfies are accepted, the others refused
by name (never built for the host behind the user's back). The host is replaced by fixed
ones, so that the outcome does not depend on the machine the tests run on."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang.tvm as tvm
from schedlang.codegen.cpu.target import CpuTarget
from schedlang.tvm import cpu_options, te

_AVX2 = "+sse2,+ssse3,+sse4.1,+sse4.2,+popcnt,+cx16,+avx,+avx2,+bmi,+bmi2,+f16c,+fma,+lzcnt,+movbe"
ZEN3 = CpuTarget("x86_64-unknown-linux-gnu", "znver3", _AVX2 + ",-avx512f,-avx512bw,-avx512vl")


@pytest.fixture
def zen3(monkeypatch):
    class Host:
        target = ZEN3

    monkeypatch.setattr(cpu_options, "host", lambda: Host)


@pytest.mark.parametrize(
    "target",
    [
        "llvm -mcpu=core-avx2",
        "llvm -mcpu=native",
        "llvm -mcpu=znver3",
        "llvm -mcpu=x86-64-v3 -mattr=+avx2,+fma",
        "llvm -mtriple=x86_64-linux-gnu -keys=cpu",
    ],
)
def test_options_the_host_satisfies_are_accepted(zen3, target):
    assert tvm.target.Target(target).kind.name == "llvm"


@pytest.mark.parametrize(
    ("target", "match"),
    [
        ("llvm -mcpu=skylake-avx512", r"-mcpu=skylake-avx512 needs avx512f, avx512bw, avx512cd"),
        ("llvm -mcpu=cortex-a72", r"does not know which instructions -mcpu=cortex-a72 needs"),
        ("llvm -mattr=+avx512f", r"-mattr=\+avx512f needs avx512f, which this CPU \(znver3\)"),
        ("llvm -mattr=-avx2", r"leaves out avx2, but schedlang compiles with every instruction"),
        ("llvm -mattr=+avx3", r"-mattr names 'avx3', a feature LLVM does not know"),
        ("llvm -mtriple=aarch64-linux-gnu", r"-mtriple=aarch64-linux-gnu is code for another"),
        ("llvm -mtriple=x86_64-pc-windows-msvc", r"is code for another machine.*x86_64-unknown"),
        ("llvm -libs=cblas", r"does not honour the option '-libs=cblas'"),
        ("c", r"target 'c' asks for C source, which schedlang does not write"),
    ],
)
def test_options_the_host_cannot_honour_are_refused_by_name(zen3, target, match):
    with pytest.raises(tvm.TVMError, match=match):
        tvm.target.Target(target)


def test_a_module_built_with_the_tutorials_target_runs(zen3):
    """TE's opt_gemm tutorial builds for "llvm -mcpu=core-avx2" and passes it to tvm.device."""
    n = 37
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    target = "llvm -mcpu=core-avx2"
    f = tvm.build(te.create_schedule(B.op), [A, B], target=target)
    dev = tvm.device(target, 0)
    a = np.random.default_rng(5).uniform(-1, 1, n).astype("float32")
    b = tvm.nd.array(np.full(n, np.nan, "float32"), dev)
    f(tvm.nd.array(a, dev), b)
    np.testing.assert_allclose(b.numpy(), a * 2 + 1, rtol=1e-6)
