"""AutoTVM's ``tvm.autotvm.task.space`` as TOPI's templates use it: the entities, and the
fallback configuration (first choices, entities set by the template, ``fallback_split``, a
reference log's tiling)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from schedlang.tune.knobs import TuneError
from schedlang.tvm import autotvm, te
from schedlang.tvm.autotvm.task.space import (
    AnnotateEntity,
    FallbackConfigEntity,
    OtherOptionEntity,
    ReorderEntity,
    SplitEntity,
    get_factors,
)

from .topi_check import check, random


def _matmul(n, l, m):  # noqa: E741 (l: the reduced extent)
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    a, b = random((n, l)), random((l, m), seed=1)
    return A, B, C, a, b


def test_get_factors():
    assert get_factors(1) == [1]
    assert get_factors(49) == [1, 7, 49]
    assert get_factors(12) == [1, 2, 3, 4, 6, 12]


def test_fallback_split_sizes_as_tvm_documents():
    cfg = FallbackConfigEntity()
    cfg.define_split("tile_0", 128, num_outputs=3)
    cfg.define_split("tile_1", 49, num_outputs=3)
    assert cfg["tile_0"].size == [-1, 1, 1]  # the first choice, as defined
    cfg.fallback_split("tile_0", [-1, 8, 4])
    cfg.fallback_split("tile_1", [-1, 8, 4])
    assert cfg["tile_0"].size == [4, 8, 4]
    assert cfg["tile_1"].size == [7, 7, 1]


def test_fallback_defaults_and_set_entities():
    cfg = FallbackConfigEntity()
    assert cfg.is_fallback
    cfg.define_knob("unroll_kw", [True, False])
    cfg.define_reorder("order", [0, 1, 2], policy="all")
    cfg.define_annotate("ann", [0, 1], policy="try_unroll_vec")
    assert cfg["unroll_kw"].val is True
    assert cfg["order"].perm == [0, 1, 2]
    assert cfg["ann"].anns == ["none", "none"]
    # set before its definition (TOPI's default configs), or after: the set entity holds
    cfg["tile_x"] = SplitEntity([3, 5])
    cfg.define_split("tile_x", 15, num_outputs=2)
    cfg["unroll_kw"] = OtherOptionEntity(False)
    cfg.define_knob("unroll_kw", [True, False])  # the compute and the schedule both define
    assert cfg["tile_x"].size == [3, 5]
    assert cfg["unroll_kw"].val is False
    assert cfg.knobs == {
        "unroll_kw": False,
        "order": [0, 1, 2],
        "ann": ["none", "none"],
        "tile_x": [3, 5],
    }


def test_a_fallback_knob_is_changed_in_place_as_topi_cuda_does():
    cfg = FallbackConfigEntity()
    cfg.define_knob("unroll_explicit", [1, 0])
    cfg["unroll_explicit"].val = 0  # TOPI's CUDA depthwise convolution, in its fallback
    assert cfg["unroll_explicit"].val == 0
    assert cfg.knobs == {"unroll_explicit": 0}


def _reference(config: dict) -> tuple:
    """A reference log's record as TOPI reads it: ``(input, result)``, ``input.config``."""
    return (SimpleNamespace(config=config), None)


def test_fallback_with_reference_log_mimics_the_closest_record():
    cfg = FallbackConfigEntity()
    cfg.define_split("tile_f", 48, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    far = {"tile_f": SplitEntity([7, 1, 1]), "auto_unroll_max_step": OtherOptionEntity(0)}
    near = {"tile_f": SplitEntity([2, 8, 3]), "auto_unroll_max_step": OtherOptionEntity(1500)}
    cfg.fallback_with_reference_log([_reference(far), _reference(near)])
    assert cfg["tile_f"].size == [2, 8, 3]  # 48's divisors share most with 48 = 2 * 8 * 3
    assert cfg["auto_unroll_max_step"].val == 1500
    cfg = FallbackConfigEntity()
    cfg.define_split("tile_y", 20, num_outputs=3)
    cfg.fallback_with_reference_log([_reference({"tile_y": SplitEntity([1, 8, 4])})])
    assert cfg["tile_y"].size == [1, 5, 4]  # its limits, fitted to 20's divisors


def test_tophub_has_no_reference_log_and_the_fallback_stays():
    cfg = FallbackConfigEntity()
    cfg.define_split("tile_f", 48, num_outputs=3)
    log = autotvm.tophub.load_reference_log("cuda", "unknown", "conv2d_nchw.cuda")
    assert log == []
    cfg.fallback_with_reference_log(log)
    assert cfg["tile_f"].size == [-1, 1, 1]


def test_fallback_axis_and_filter():
    cfg = FallbackConfigEntity()
    cfg.define_split("tile_ow", cfg.axis(9), num_outputs=2, filter=lambda y: y.size[-1] >= 3)
    assert cfg["tile_ow"].size == [-1, 3]


def test_fallback_errors():
    cfg = FallbackConfigEntity()
    with pytest.raises(TuneError, match="'tile_y'"):
        cfg["tile_y"]
    cfg.define_knob("k", [1, 2])
    with pytest.raises(TuneError, match="not a split knob"):
        cfg.fallback_split("k", [-1, 2])
    cfg.define_split("tile", 12, num_outputs=3)
    with pytest.raises(TuneError, match="3 sizes, 2 constraints"):
        cfg.fallback_split("tile", [-1, 2])
    with pytest.raises(TuneError, match="fits constraint 0"):
        cfg.fallback_split("tile", [-1, 2, 0])


def test_split_entity_apply_nests_splits():
    """A split of [-1, 3, 2] on an odd extent: three loops, the inner two of 3 and 2, and the
    edge guarded."""
    A, B, C, a, b = _matmul(13, 9, 11)
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    axes = SplitEntity([-1, 3, 2]).apply(s, C, i)
    assert len(axes) == 3
    assert [str(ax) for ax in axes] == ["i.outer", "i.inner.outer", "i.inner.inner"]
    jo, ji = SplitEntity([-1, 4]).apply(s, C, j)
    s[C].reorder(axes[0], jo, axes[1], axes[2], ji)
    check(C, [A, B], [a, b], a @ b, schedule=s, rtol=1e-4, atol=1e-5)


def test_reorder_and_annotate_entities_apply():
    A, B, C, a, b = _matmul(7, 5, 12)
    s = te.create_schedule(C.op)
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    jo, ji = SplitEntity([-1, 4]).apply(s, C, j)
    ordered = ReorderEntity([0, 2, 1, 3]).apply(s, C, [i, jo, k, ji])
    assert ordered == [i, k, jo, ji]
    AnnotateEntity(["none", "none", "unroll", "vec"]).apply(s, C, ordered)
    check(C, [A, B], [a, b], a @ b, schedule=s, rtol=1e-4, atol=1e-5)
    assert np.all(np.isfinite(a @ b))
