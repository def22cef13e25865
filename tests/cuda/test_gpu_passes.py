"""The loop-IR passes only the cuda target runs (`loopir.gpu.passes`): register tiles computed
whole (`loopir.gpu.register_guards`) and whole tiles split from the guarded ones
(`loopir.loops.full_tiles`).

Each schedule is built for cuda at sizes that leave partial tiles, and the interpreter runs the
kernel's loop IR (after the passes) against the reference; the structure is checked too."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.ir.printer import expr_str
from schedlang.loopir.core.nodes import Allocate, If, Store
from schedlang.loopir.core.visit import stmt_children, walk_stmt
from schedlang.loopir.gpu.passes import gpu_passes
from schedlang.loopir.gpu.register_guards import drop_register_guards
from schedlang.loopir.interpret import run
from schedlang.loopir.loops.full_tiles import split_full_tiles
from tests.schedule.util import random_inputs

from . import kernels
from .ptxas import assemble

CASES = [
    ("te_gemm", (37, 29, 13), {}),
    ("te_gemm", (64, 64, 8), {}),
    ("te_gemm_64", (100,), {}),
    ("gemm_shared", (), {"m": 19, "n": 21}),
    ("gemm_double_buffered", (), {"m": 19, "n": 21}),
    ("gemm_registers", (), {}),
    ("transpose", (), {}),
    ("blur", (), {}),
    ("row_sum_rfactor", (), {}),
    ("vector_add", (), {"n": 77}),
]


def _build(name, args):
    s, inputs, outputs = getattr(kernels, name)(*args)
    return sl.build(s, [*inputs, *outputs], target="cuda"), inputs, outputs


@pytest.mark.parametrize(("name", "args", "sizes"), CASES)
def test_gpu_loop_ir_matches_the_reference(name, args, sizes):
    kernel, inputs, outputs = _build(name, args)
    values = random_inputs(inputs, sizes, seed=5)
    wants = [sl.evaluate(t, values) for t in outputs]
    results = [np.full(w.shape, np.nan, np.float32) for w in wants]
    run(kernel.lowered, [values[p] for p in inputs] + results)
    for got, want in zip(results, wants):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _guarded_stores(stmt, scope):
    """Stores to buffers of `scope` with an `If` above them inside the kernel."""
    found = []

    def visit(s, guarded):
        if isinstance(s, Store) and guarded and s.buffer.scope == scope:
            found.append(s)
        for child in stmt_children(s):
            visit(child, guarded or isinstance(s, If))

    visit(stmt, False)
    return found


def test_register_tiles_lose_their_guards_and_global_stores_keep_theirs():
    """TE's recipe at 1000 (not a multiple of its 64 tiles): no store to a local buffer is
    guarded any more, every store to C still is."""
    s, inputs, outputs = kernels.te_gemm_64(1000)
    before = sl.lower(s, [*inputs, *outputs])
    assert _guarded_stores(before.body, "local")
    after = drop_register_guards(before.body)
    assert not _guarded_stores(after, "local")
    c_stores = [x for x in walk_stmt(after) if isinstance(x, Store) and x.buffer.scope == "global"]
    assert c_stores and len(_guarded_stores(after, "global")) == len(c_stores)


def test_a_guard_shared_by_stores_that_read_global_memory_stays():
    """A local cache filled straight from global memory: the fill must stay guarded (the
    missing points would read outside A)."""
    a = sl.placeholder((30, 30), name="A")
    c = sl.compute((30, 30), lambda i, j: a[i, j] * 2.0, name="C")
    s = sl.create_schedule(c)
    al = s.cache_read(a, "local", [c])
    by, bx, ty, tx = s[c].tile(c.op.axis[0], c.op.axis[1], 8, 8)
    for axis, tag in (
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[c].bind(axis, sl.thread_axis(tag))
    s[al].compute_at(s[c], tx)
    func = sl.lower(s, [a, c])
    assert _guarded_stores(func.body, "local")
    kept = _guarded_stores(drop_register_guards(func.body), "local")
    assert len(kept) == len(_guarded_stores(func.body, "local"))


def test_whole_tiles_are_split_from_the_boundary():
    """One test per block decides between the guard-free body and the guarded one; the
    shared tiles are allocated once, above both."""
    s, inputs, outputs = kernels.te_gemm_64(1000)
    body = split_full_tiles(sl.lower(s, [*inputs, *outputs]).body)
    (split,) = [x for x in walk_stmt(body) if isinstance(x, If) and x.otherwise is not None]
    assert "j.outer" in expr_str(split.cond) and "i.outer" in expr_str(split.cond)
    fast_guards = [x for x in walk_stmt(split.then) if isinstance(x, If)]
    slow_guards = [x for x in walk_stmt(split.otherwise) if isinstance(x, If)]
    assert len(fast_guards) < len(slow_guards)
    shared = [x for x in walk_stmt(body) if isinstance(x, Allocate) and x.buffer.scope == "shared"]
    assert sorted(a.buffer.name for a in shared) == ["A.shared", "B.shared"]
    inside = [x for x in walk_stmt(split) if isinstance(x, Allocate) and x.buffer.scope == "shared"]
    assert not inside


def test_a_guard_that_fails_for_every_block_is_not_lifted():
    """The tail of a reduction (k < 13 inside a loop over 16) holds for no block at all: the
    split would never take the fast branch, so there is none."""
    s, inputs, outputs = kernels.te_gemm(64, 64, 13)
    body = sl.lower(s, [*inputs, *outputs]).body
    assert not [
        x
        for x in walk_stmt(split_full_tiles(body))
        if isinstance(x, If) and x.otherwise is not None
    ]


@pytest.mark.parametrize("size", [1000, 999])
def test_te_recipe_at_a_size_that_is_not_a_multiple_keeps_its_registers(size):
    """No spills and 16-byte shared accesses, as at 1024."""
    kernel, _, _ = _build("te_gemm_64", (size,))
    report = assemble(kernel.ptx)
    assert report.spill_bytes == 0 and report.stack_bytes == 0, report.log
    assert report.registers <= 168, report.log
    assert "ld.shared.v4" in kernel.ptx
    if size % 8 == 0:  # at 999 the last step of k reads single words
        assert "ld.shared.b32" not in kernel.ptx


def test_the_split_is_the_same_from_build_to_build():
    """The whole-tile conditions are combined in program order, not in the order of the guards'
    addresses: the PTX (and the compile cache's key) must not change between builds."""
    texts = set()
    for _ in range(4):
        s, inputs, outputs = kernels.te_gemm_64(1000)
        texts.add(str(gpu_passes(sl.lower(s, [*inputs, *outputs]))))
    assert len(texts) == 1
