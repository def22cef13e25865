"""`sink_vector_loops`: a vectorized loop moves inside the thread loops below it."""

from __future__ import annotations

import schedlang as sl
from schedlang.ir.expr import Var, const
from schedlang.loopir.core.nodes import Buffer, For, If, Store
from schedlang.loopir.loops.vector_inner import sink_vector_loops

v = Var("v", "int32", "loop")
tx = Var("tx", "int32", "loop")
buf = Buffer("S", (const(64),), "float32", "shared")


def test_vector_loop_goes_inside_thread_loop_and_its_guard():
    store = Store(buf, (tx * 8 + v,), const(1.0, "float32"))
    guard = If(tx < 5, store)
    nest = For(
        v,
        const(0),
        const(8),
        "vectorized",
        For(tx, const(0), const(8), "bound", guard, "threadIdx.x"),
    )
    out = sink_vector_loops(nest)
    assert isinstance(out, For) and out.thread == "threadIdx.x"
    assert isinstance(out.body, If) and out.body.cond is guard.cond
    assert out.body.then.kind == "vectorized" and out.body.then.body is store


def test_guard_on_the_vector_variable_stays_inside():
    store = Store(buf, (v,), const(1.0, "float32"))
    nest = For(v, const(0), const(8), "vectorized", If(v < 5, store))
    assert sink_vector_loops(nest) is nest


def test_lowered_fill_vectorizes_inside_threads():
    n = 64
    a = sl.placeholder((n, n), name="A")
    b = sl.compute((n, n), lambda i, j: a[i, j] * 2.0, name="B")
    s = sl.create_schedule(b)
    aa = s.cache_read(a, "shared", [b])
    bo, bi = s[b].split(b.op.axis[0], factor=8)
    s[b].bind(bo, sl.thread_axis("blockIdx.x"))
    s[b].bind(bi, sl.thread_axis("threadIdx.x"))
    s[aa].compute_at(s[b], bo)
    fused = s[aa].fuse(*s[aa].op.axis)
    t, vec = s[aa].split(fused, factor=4)
    _, t = s[aa].split(t, factor=8)
    s[aa].bind(t, sl.thread_axis("threadIdx.x"))
    s[aa].vectorize(vec)
    text = str(sl.lower(s, [a, b]))
    assert (
        "for ax0.ax1.fused.outer.inner in range(0, 8):  # threadIdx.x\n"
        "        for ax0.ax1.fused.inner in range(0, 4):  # vectorized\n"
        "          A.shared[" in text
    )
