"""``s[T].pragma(axis, name, value)``, TE's pragmas: auto-unrolling by a step budget, the two
that are primitives, and the refused ones with their reasons."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.errors import AnnotationError
from schedlang.schedule.schedule import replay
from schedlang.schedule.text import schedule_text


def _blocked_matmul(n=24, m=20, k_len=18):
    a = sl.placeholder((n, k_len), name="A")
    b = sl.placeholder((k_len, m), name="B")
    k = sl.reduce_axis(k_len, name="k")
    c = sl.compute((n, m), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c.op)
    io, jo, ii, ji = s[c].tile(c.op.axis[0], c.op.axis[1], 4, 5)
    ko, ki = s[c].split(k, factor=3)
    s[c].reorder(io, jo, ko, ki, ii, ji)
    return s, (a, b, c), ko


def _run(s, tensors):
    a, b, c = tensors
    rng = np.random.default_rng(9)
    x = rng.uniform(-1, 1, [int(d) for d in a.shape]).astype("float32")
    y = rng.uniform(-1, 1, [int(d) for d in b.shape]).astype("float32")
    out = np.full([int(d) for d in c.shape], np.nan, "float32")
    sl.build(s, list(tensors))(x, y, out)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-6)


def test_auto_unroll_unrolls_inner_loops_within_the_step_budget():
    s, tensors, ko = _blocked_matmul()
    c = tensors[2]
    s[c].pragma(ko, "auto_unroll_max_step", 20)  # ji (5) x ii (4) = 20 fit, x ki (3) does not
    s[c].pragma(ko, "unroll_explicit", False)
    text = str(sl.lower(s, list(tensors)))
    assert "for k.inner in range(0, 3):" in text
    assert "for i.inner" not in text and "for j.inner" not in text
    assert text.count("] + A[") == 20  # the 4 x 5 register tile, written out
    _run(s, tensors)


def test_a_budget_that_fits_no_loop_unrolls_nothing():
    s, tensors, ko = _blocked_matmul()
    s[tensors[2]].pragma(ko, "auto_unroll_max_step", 4)  # ji alone is 5
    text = str(sl.lower(s, list(tensors)))
    assert "for j.inner in range(0, 5):" in text and "for i.inner in range(0, 4):" in text


def test_the_pragma_replays_and_reads_as_python():
    s, tensors, ko = _blocked_matmul()
    s[tensors[2]].pragma(ko, "auto_unroll_max_step", 64)
    again = replay(s.roots, s.records)
    assert str(sl.lower(again, list(tensors))) == str(sl.lower(s, list(tensors)))
    assert 's[C].pragma(C_k_outer, "auto_unroll_max_step", 64)' in schedule_text(s)


def test_unroll_and_vectorize_pragmas_are_the_primitives():
    texts = []
    for how in ("pragma", "primitive"):
        s, tensors, _ = _blocked_matmul()
        stage = s[tensors[2]]
        inner, k_inner = stage.leaves[-1], stage.leaves[-3]
        if how == "pragma":
            stage.pragma(inner, "vectorize")
            stage.pragma(k_inner, "unroll")
        else:
            stage.vectorize(inner)
            stage.unroll(k_inner)
        texts.append(str(sl.lower(s, list(tensors))))
        _run(s, tensors)
    assert texts[0] == texts[1] and "for k.inner" not in texts[0]


def test_pragmas_schedlang_has_not_are_refused_with_the_reason():
    s, tensors, ko = _blocked_matmul()
    c = tensors[2]
    with pytest.raises(AnnotationError, match="needs a C compiler; compile the functions to"):
        s[c].pragma(ko, "import_c", "int f(void) { return 0; }")
    with pytest.raises(AnnotationError, match="import_llvm takes LLVM IR as text, not bytes"):
        s[c].pragma(ko, "import_llvm", b"define void @f() { ret void }")
    with pytest.raises(AnnotationError, match="skips no region"):
        s[c].pragma(ko, "debug_skip_region")
    with pytest.raises(AnnotationError, match="an int >= 0, not 2.5"):
        s[c].pragma(ko, "auto_unroll_max_step", 2.5)


def test_a_scope_split_after_the_pragma_is_named_when_lowered():
    s, tensors, ko = _blocked_matmul()
    c = tensors[2]
    s[c].pragma(ko, "auto_unroll_max_step", 16)
    s[c].split(ko, factor=2)
    with pytest.raises(AnnotationError, match="'k.outer' was split or fused after the pragma"):
        sl.lower(s, list(tensors))


def test_a_pragma_schedlang_acts_on_in_no_way_is_kept_with_a_warning():
    s, tensors, ko = _blocked_matmul()
    c = tensors[2]
    before = str(sl.lower(s, list(tensors)))
    with pytest.warns(sl.SchedlangWarning, match="acts on no pragma 'prefetch_scope' .*kept on"):
        s[c].pragma(ko, "prefetch_scope", 2)
    attrs = s[c].iter_var_attrs[ko]
    assert [k.value for k in attrs.pragma_keys] == ["prefetch_scope"]
    assert attrs.pragma_values == (2,)
    assert "s[C].pragma(C_k_outer, 'prefetch_scope', 2)" in str(s)
    with pytest.warns(sl.SchedlangWarning):
        copied = s.copy()
    assert str(sl.lower(copied, list(tensors))) == before
    _run(copied, tensors)
