"""``tvm.lower`` and ``schedule_to_module`` give an ``IRModule`` of ``PrimFunc``s over
schedlang's loop nest, walked with ``tvm.tir.stmt_functor.post_order_visit``."""

from __future__ import annotations

import schedlang as sl
import schedlang.tvm as tvm
from schedlang.loopir.core.nodes import For, Load, Store
from schedlang.tvm import te
from schedlang.tvm.driver.build_module import schedule_to_module


def _split_copy(n=10, factor=4):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=factor)
    return s, A, B


def test_the_module_prints_as_the_loop_nest_and_holds_main():
    s, A, B = _split_copy()
    mod = tvm.lower(s, [A, B])
    assert isinstance(mod, tvm.IRModule) and isinstance(mod, tvm.ir.IRModule)
    assert list(mod) == ["main"]
    assert isinstance(mod["main"], tvm.tir.PrimFunc)
    assert str(mod) == str(sl.lower(s, [A, B]))
    assert str(schedule_to_module(s, [A, B])) == str(mod)


def test_post_order_visit_sees_children_before_parents():
    s, A, B = _split_copy()
    body = tvm.lower(s, [A, B])["main"].body
    order = []
    tvm.tir.stmt_functor.post_order_visit(body, order.append)
    kinds = [type(n) for n in order]
    assert kinds.count(For) == 2 and kinds.count(Store) == 1 and kinds.count(Load) == 1
    assert kinds.index(Load) < kinds.index(Store) < kinds.index(For)
    assert order[-1] is body
    assert len({id(n) for n in order}) == len(order)  # each node once


def test_constants_are_int_or_float_imms_by_dtype():
    assert isinstance(tvm.tir.const(1, "int32"), tvm.tir.IntImm)
    assert not isinstance(tvm.tir.const(1.0, "float32"), tvm.tir.IntImm)
    assert isinstance(tvm.tir.const(1.0, "float32"), tvm.tir.FloatImm)
    assert isinstance(te.var("n") + 1, tvm.tir.PrimExpr)
