"""TE's spelling of hybrid scripts: ``te.hybrid.script``, ``te.hybrid.build`` and its module
(saved and loaded as Python source), ``te.hybrid.runtime.HYBRID_GLOBALS`` and the loop kinds
``tvm.tir.ForKind`` names, checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang.tvm as tvm
from schedlang.errors import AlgorithmError
from schedlang.tvm import te
from schedlang.tvm.te.hybrid.runtime import HYBRID_GLOBALS

RNG = np.random.default_rng(5)


@te.hybrid.script
def shifted_sums(a, shifts):
    out = output_tensor((a.shape[0], len(shifts)), "float32")  # noqa: F821
    for i in parallel(a.shape[0]):  # noqa: F821
        for k in const_range(len(shifts)):  # noqa: F821
            out[i, k] = a[i] + shifts[k]
    return out


def test_a_te_script_builds_with_tvm_build_and_runs_on_arrays():
    n = te.size_var("n")
    a = te.placeholder((n,), "float32", name="a")
    out = shifted_sums(a, [1.5, -2.0, 0.25])
    assert isinstance(out, te.tensor.Tensor) and out.op.body[0].kind == tvm.tir.ForKind.PARALLEL
    s = te.create_schedule(out.op)
    func = tvm.build(s, [a, out], "llvm")
    x = RNG.uniform(-1, 1, 7).astype("float32")
    got = tvm.nd.array(np.full((7, 3), np.nan, "float32"))
    func(tvm.nd.array(x), got)
    expected = x[:, None] + np.array([1.5, -2.0, 0.25], "float32")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(shifted_sums(x, [1.5, -2.0, 0.25]), expected, rtol=1e-6)
    assert not set(HYBRID_GLOBALS) & set(globals())


def test_the_module_of_te_hybrid_build_keeps_what_is_not_a_tensor(tmp_path):
    a = te.placeholder((5,), "float32", name="a")
    out = shifted_sums(a, [3.0, 4.0])
    module = te.hybrid.build(te.create_schedule(out.op), [a], [out])
    x = RNG.uniform(-1, 1, 5).astype("float32")
    expected = x[:, None] + np.array([3.0, 4.0], "float32")
    np.testing.assert_allclose(module(x), expected, rtol=1e-6)
    again = module(a)  # on tensors: the script's op again, over the same shifts
    assert again.shape[1].value == 2
    with pytest.raises(AlgorithmError, match="takes 1 argument"):
        module(x, [3.0, 4.0])
    path = tmp_path / "shifted_sums.py"
    module.save(path)
    assert path.read_text().startswith("def shifted_sums(a, shifts):")
    loaded = te.hybrid.HybridModule()
    loaded.load(path)
    assert loaded.name == "shifted_sums"
    np.testing.assert_allclose(loaded(x, [3.0, 4.0]), expected, rtol=1e-6)


def test_tir_popcount_counts_bits_in_a_compute():
    a = te.placeholder((6,), "int32", name="a")
    b = te.compute((6,), lambda i: tvm.tir.popcount(a[i]), name="b")
    func = tvm.build(te.create_schedule(b.op), [a, b], "llvm")
    x = np.array([0, 1, 7, -1, 1024, 114514], "int32")
    got = tvm.nd.array(np.zeros(6, "int32"))
    func(tvm.nd.array(x), got)
    np.testing.assert_array_equal(got.numpy(), [0, 1, 3, 32, 1, 11])


def test_for_kinds_name_the_loop_kinds_of_lowered_loops():
    a = te.placeholder((16,), name="a")
    b = te.compute((16,), lambda i: a[i] * 2.0, name="b")
    s = te.create_schedule(b.op)
    outer, inner = s[b].split(b.op.axis[0], factor=4)
    s[b].vectorize(inner)
    kinds = []
    tvm.tir.stmt_functor.post_order_visit(
        tvm.lower(s, [a, b])["main"].body,
        lambda node: kinds.append(node.kind) if hasattr(node, "kind") else None,
    )
    assert tvm.tir.ForKind.VECTORIZED in kinds and tvm.tir.ForKind.SERIAL in kinds


@te.hybrid.script
def bound_sums(a, b):
    c = output_tensor((1000,), "float32")  # noqa: F821
    for tx in bind("threadIdx.x", 1000):  # noqa: F821
        c[tx] = a[tx] + b[tx]
    return c


def test_a_script_built_for_cuda_gives_its_ptx_and_runs_simulated():
    a = te.placeholder((1000,), "float32", name="a")
    b = te.placeholder((1000,), "float32", name="b")
    c = bound_sums(a, b)
    func = tvm.build(te.create_schedule(c.op), [a, b, c], "cuda")
    assert ".entry" in func.imported_modules[0].get_source()
    x, y = (RNG.uniform(-1, 1, 1000).astype("float32") for _ in range(2))
    got = np.full(1000, np.nan, "float32")
    func.kernel.simulate(x, y, got)  # the loop-IR interpreter: no GPU needed
    np.testing.assert_allclose(got, x + y, rtol=1e-6)


@te.hybrid.script
def plain_sums(a, b):
    c = output_tensor((1000,), "float32")  # noqa: F821
    for i in range(1000):
        c[i] = a[i] + b[i]
    return c


def test_te_hybrid_build_writes_the_schedule_into_its_module():
    a = te.placeholder((1000,), "float32", name="a")
    b = te.placeholder((1000,), "float32", name="b")
    c = plain_sums(a, b)
    s = te.create_schedule(c.op)
    s[c].bind(c.op.axis[0], te.thread_axis("threadIdx.x"))
    module = te.hybrid.build(s, [a, b], [c])
    assert "for i in bind('threadIdx.x', 1000):" in module.src
    again = module(a, b)  # a script from the module's source: the loop is bound
    assert again.op.body[0].kind == tvm.tir.ForKind.THREAD_BINDING
    func = tvm.build(te.create_schedule(again.op), [a, b, again], "cuda")
    x, y = (RNG.uniform(-1, 1, 1000).astype("float32") for _ in range(2))
    got = np.full(1000, np.nan, "float32")
    func.kernel.simulate(x, y, got)
    np.testing.assert_allclose(got, x + y, rtol=1e-6)


def test_te_hybrid_build_refuses_a_schedule_its_module_cannot_carry():
    a = te.placeholder((1000,), "float32", name="a")
    b = te.placeholder((1000,), "float32", name="b")
    c = plain_sums(a, b)
    s = te.create_schedule(c.op)
    s[c].split(c.op.axis[0], factor=10)
    with pytest.raises(tvm.error.TVMError, match="splits, fuses or reorders the loops of"):
        te.hybrid.build(s, [a, b], [c])
