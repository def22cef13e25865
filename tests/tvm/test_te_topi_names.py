"""The TE names that TOPI's Python code reads (``tvm.tir.IntImm``, ``tvm.tir.layout``,
``tvm.target.generic_func``, ``te.schedule.AutoInlineInjective``, ...), each against what TE
does with it."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
import schedlang.tvm as tvm
from schedlang.errors import AlgorithmError
from schedlang.tvm import te
from schedlang.tvm.contrib.pickle_memoize import memoize

from .topi_check import check, random


def test_node_classes_are_views_of_schedlang_constants_and_variables():
    n = te.var("n")
    assert isinstance(sl.const(4), tvm.tir.IntImm)  # schedlang's own constants are IntImms
    assert not isinstance(sl.const(4.0), tvm.tir.IntImm)
    four = tvm.tir.IntImm("int64", 4)
    assert (four.dtype, int(four.value)) == ("int64", 4)
    assert isinstance(tvm.tir.const(2.5), tvm.tir.FloatImm)
    assert not isinstance(tvm.tir.const(2.5), tvm.tir.IntImm)
    assert isinstance(n, tvm.tir.SizeVar) and isinstance(n, tvm.tir.expr.Var)
    assert isinstance(tvm.tir.SizeVar("m", "int32"), tvm.tir.Var)
    assert isinstance(n + 1, tvm.tir.PrimExpr) and not isinstance(n, tvm.tir.Any)
    assert tvm.tir.Cast("float32", n).dtype == "float32"
    with pytest.raises(TypeError, match="schedlang has no unknown dimensions"):
        tvm.tir.Any()


def test_layouts_convert_shapes_and_indices():
    blocked = tvm.tir.layout("NCHW4c")
    assert (len(blocked), blocked[4], blocked.index_of("H"), blocked.factor_of("C")) == (
        5,
        "c",
        2,
        4,
    )
    assert blocked.index_of("D") == -1 and blocked.factor_of("H") == -1
    convert = tvm.tir.bijective_layout("NCHW", "NCHW4c")
    assert convert.forward_shape((2, 10, 5, 3)) == (2, 3, 5, 3, 4)
    assert convert.forward_index((1, 6, 2, 0)) == (1, 1, 2, 0, 2)
    assert convert.backward_index((1, 1, 2, 0, 2)) == (1, 6, 2, 0)
    with pytest.raises(AlgorithmError, match="is not a layout such as NCHW"):
        tvm.tir.layout("N4C")
    with pytest.raises(AlgorithmError, match="their dimensions differ"):
        tvm.tir.bijective_layout("NCHW", "NCDHW")


def test_generic_func_dispatches_on_the_current_target():
    @tvm.target.generic_func
    def kind(x):
        return f"default {x}"

    @kind.register(["cpu"])
    def _cpu(x):
        return f"cpu {x}"

    assert kind(1) == "default 1"
    with tvm.target.Target("llvm"):
        assert kind(2) == "cpu 2"
    with pytest.raises(ValueError, match="key 'cpu' is taken"):
        kind.register("cpu", lambda x: x)


def test_auto_inline_injective_inlines_unscheduled_stages_without_reductions():
    A = te.placeholder((5, 7), name="A")
    B = te.compute((5, 7), lambda i, j: A[i, j] * 2, name="B")
    k = te.reduce_axis((0, 7), name="k")
    C = te.compute((5,), lambda i: te.sum(B[i, k], axis=k), name="C")
    D = te.compute((5,), lambda i: C[i] + 1, name="D")
    s = te.create_schedule(D.op)
    te.schedule.AutoInlineInjective(s)
    assert "B" not in str(tvm.lower(s, [A, D])) and "C" in str(tvm.lower(s, [A, D]))
    a = random((5, 7))
    check(D, [A], [a], (a * 2).sum(1) + 1, schedule=s)


def test_te_div_and_the_op_classes():
    a, b = te.var("a"), te.var("b")
    assert te.div(a.astype("float32"), 2.0).dtype == "float32"
    A = te.placeholder((9,), dtype="int32", name="A")
    q = te.compute((9,), lambda i: te.div(A[i], 4), name="q")
    x = np.arange(-4, 5, dtype="int32")
    check(q, [A], [x], np.trunc(x / 4).astype("int32"))
    assert isinstance(q.op, te.tensor.ComputeOp) and isinstance(A.op, te.PlaceholderOp)
    assert b.dtype == "int32"


def test_analyzer_folds_constant_extents_and_memoize_keeps_results():
    three = tvm.tir.const(3)
    assert int(tvm.arith.Analyzer().simplify(three * 5 + 1).value) == 16
    calls = []

    @memoize("topi.tests.square")
    def square(x):
        calls.append(x)
        return x * x

    assert (square(4), square(4), calls) == (16, 16, [4])
