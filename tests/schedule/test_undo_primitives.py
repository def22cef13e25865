"""`Schedule.undo` after every primitive of the API: the schedule is exactly the one before it
(the same loop nest, the user's tensors and stages still its own, the same values), and the
primitive applied again gives what it gave the first time. The schedules start with stages
that cache_read, cache_write and rfactor added, whose ops a replay must make again."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

import schedlang as sl

from .test_gpu_schedules import gemm_shared_local, matmul
from .test_user_intrin import IR, L, _gemv, _product
from .util import check


@dataclass
class Case:
    s: sl.Schedule
    inputs: list
    outputs: list
    held: dict = field(default_factory=dict)  # name -> a tensor the user holds
    sizes: dict = field(default_factory=dict)


def _gemm() -> Case:
    """TE's GPU GEMM recipe: shared tiles, a local accumulator, loops bound to threads."""
    a, b, c = matmul(9, 7, 10)
    s = sl.create_schedule(c)
    aa, bb, cl = gemm_shared_local(s, a, b, c)
    return Case(s, [a, b], [c], {"A": a, "B": b, "C": c, "AA": aa, "BB": bb, "CL": cl})


def _chain() -> Case:
    """A scaled copy, a row sum of it, and one more step; the input staged by cache_read."""
    n = sl.var("n")
    alpha = sl.var("alpha", "float32")
    a = sl.placeholder((n, 37), name="A")
    b = sl.compute((n, 37), lambda i, j: a[i, j] * alpha, name="B")
    k = sl.reduce_axis((0, 37), name="k")
    c = sl.compute((n,), lambda i: sl.sum(b[i, k], axis=k), name="C")
    d = sl.compute((n,), lambda i: c[i] + 1.0, name="D")
    s = sl.create_schedule(d)
    aa = s.cache_read(a, "global", [b])
    s[d].split(d.op.axis[0], factor=4)
    held = {"A": a, "B": b, "C": c, "D": d, "AA": aa, "alpha": alpha}
    return Case(s, [a, alpha], [d], held, {"n": 11})


def _gemv_tiles() -> Case:
    """A product whose tiles a declared intrinsic's C functions can compute, one operand
    staged by cache_read."""
    a, b, c = _product()
    s = sl.create_schedule(c)
    bb = s.cache_read(b, "global", [c])
    i, j = c.op.axis
    s[c].split(j, factor=16)
    s[c].pragma(i, "import_llvm", IR)
    return Case(s, [a, b], [c], {"A": a, "B": b, "C": c, "BB": bb})


def _leaf(s, name, k):
    return s[name].leaves[k]


def _split_k(s, tensor):
    """The inner loop of `tensor`'s reduction split by 8 (a primitive of its own)."""
    return s[tensor].split(tensor.op.reduce_axis[0], factor=8)[1]


# name -> (schedule, the primitive applied to it: one call, or the calls it takes)
PRIMITIVES = {
    "split": (_gemm, lambda s, t: s[t["C"]].split(_leaf(s, "C", -1), factor=2)),
    "tile": (_gemm, lambda s, t: s[t["CL"]].tile(*t["CL"].op.axis, 2, 3)),
    "fuse": (_gemm, lambda s, t: s[t["C"]].fuse(*s["C"].leaves[-2:])),
    "reorder": (_gemm, lambda s, t: s[t["C"]].reorder(_leaf(s, "C", -1), _leaf(s, "C", -2))),
    "unroll": (_gemm, lambda s, t: s[t["CL"]].unroll(_leaf(s, "C.local", 1))),
    "vectorize": (_gemm, lambda s, t: s[t["CL"]].vectorize(_leaf(s, "C.local", -1))),
    "parallel": (_chain, lambda s, t: s[t["D"]].parallel(_leaf(s, "D", 0))),
    "bind": (_gemm, lambda s, t: s[t["C"]].bind(_leaf(s, "C", -1), sl.thread_axis("vthread"))),
    "pragma": (
        _gemm,
        lambda s, t: s[t["CL"]].pragma(_leaf(s, "C.local", 0), "auto_unroll_max_step", 16),
    ),
    "compute_at": (_gemm, lambda s, t: s[t["AA"]].compute_at(s[t["CL"]], _leaf(s, "C.local", 1))),
    "compute_inline": (_chain, lambda s, t: s[t["B"]].compute_inline()),
    "compute_root": (_gemm, lambda s, t: s[t["BB"]].compute_root()),
    "cache_read": (_gemm, lambda s, t: s.cache_read(t["AA"], "local", [t["CL"]])),
    "cache_read of a scalar": (_chain, lambda s, t: s.cache_read(t["alpha"], "local", [t["B"]])),
    "cache_write": (_chain, lambda s, t: s.cache_write(t["C"], "local")),
    "set_scope": (_gemm, lambda s, t: s[t["AA"]].set_scope("local")),
    "storage_align": (_gemm, lambda s, t: s[t["AA"]].storage_align(t["AA"].op.axis[0], 8, 1)),
    "double_buffer": (_gemm, lambda s, t: s[t["AA"]].double_buffer()),
    "pipeline": (_gemm, lambda s, t: s[t["BB"]].pipeline(2)),
    "swizzle": (_gemm, lambda s, t: s[t["AA"]].swizzle(32)),
    "rfactor": (_chain, lambda s, t: s.rfactor(t["C"], _split_k(s, t["C"]))),
    "tensorize": (_gemv_tiles, lambda s, t: s[t["C"]].tensorize(_leaf(s, "C", 2), _gemv(16, L))),
    "set_store_predicate": (
        _gemm,
        lambda s, t: s[t["C"]].set_store_predicate(sl.thread_axis("threadIdx.x").var >= 0),
    ),
}


def _lowered(case: Case) -> str:
    """The loop nest, or the error lowering gives (the same error is as good an answer)."""
    try:
        return str(sl.lower(case.s, case.inputs + case.outputs))
    except sl.ScheduleError as error:
        return f"{type(error).__name__}: {error}"


def _all_held(case: Case, stages: dict) -> None:
    """Each tensor the user holds names its stage still, the very Stage object held."""
    for name, tensor in case.held.items():
        assert case.s[tensor] is stages[name], name


@pytest.mark.parametrize("primitive", list(PRIMITIVES))
def test_undo_gives_back_the_schedule_before_the_primitive(primitive):
    base, apply = PRIMITIVES[primitive]
    case = base()
    s = case.s
    before, records = _lowered(case), list(s.records)
    stages = {name: s[tensor] for name, tensor in case.held.items()}
    apply(s, case.held)
    assert len(s.records) > len(records)
    after = _lowered(case)
    assert after != before
    s.undo(len(s.records) - len(records))
    assert _lowered(case) == before
    assert s.records == records  # the user's lines too, which messages name
    _all_held(case, stages)
    check(s, case.inputs, case.outputs, case.sizes)
    apply(s, case.held)  # again, with the tensors and axes held since before the undo
    assert _lowered(case) == after


def _gemm_steps():
    """TE's GPU GEMM recipe one primitive at a time, each a function of the schedule and the
    tensors so far (the caches are added to them as they are made)."""
    a, b, c = matmul(9, 7, 10)
    t = {"A": a, "B": b, "C": c}

    def cache(name, source, scope, readers=None):
        def step(s):
            if readers is None:
                t[name] = s.cache_write(t[source], scope)
            else:
                t[name] = s.cache_read(t[source], scope, [t[r] for r in readers])

        return step

    def loops(name, method, *picks, **options):
        def step(s):
            stage = s[t[name]]
            getattr(stage, method)(*[pick(s, stage) for pick in picks], **options)

        return step

    def leaf(k):
        return lambda s, stage: stage.leaves[k]

    def bound(k, tag):
        return loops("C", "bind", leaf(k), lambda s, stage: sl.thread_axis(tag))

    def at(consumer, k):
        return lambda s, stage: s[t[consumer]]

    steps = [
        cache("AA", "A", "shared", ["C"]),
        cache("BB", "B", "shared", ["C"]),
        cache("CL", "C", "local"),
        loops("C", "split", leaf(0), factor=4),
        loops("C", "split", leaf(2), factor=4),
        loops("C", "split", leaf(1), nparts=2),
        loops("C", "reorder", leaf(0), leaf(3), leaf(1)),
        bound(0, "blockIdx.y"),
        bound(1, "blockIdx.x"),
        loops("CL", "compute_at", at("C", 3), lambda s, stage: s[t["C"]].leaves[3]),
        loops("CL", "split", lambda s, stage: t["CL"].op.reduce_axis[0], factor=3),
        loops("AA", "compute_at", at("CL", 0), lambda s, stage: s[t["CL"]].leaves[2]),
        loops("BB", "compute_at", at("CL", 0), lambda s, stage: s[t["CL"]].leaves[2]),
        loops("AA", "double_buffer"),
        loops("CL", "unroll", leaf(-1)),
    ]
    return t, a, b, c, steps


def test_a_sequence_of_primitives_undone_in_turn():
    t, a, b, c, steps = _gemm_steps()
    s = sl.create_schedule(c)
    case = Case(s, [a, b], [c], t)
    seen = []
    for step in steps:
        seen.append((_lowered(case), list(s.records), {n: s[x] for n, x in t.items()}))
        step(s)
    final = _lowered(case)
    for text, records, stages in reversed(seen):
        s.undo()
        assert _lowered(case) == text
        assert s.records == records
        for name, stage in stages.items():
            assert s[t[name]] is stage, name
    assert s.records == []
    for step in steps:  # and forward again, the tensors made anew
        step(s)
    assert _lowered(case) == final
    check(s, [a, b], [c])


def test_undo_of_several_at_once_then_the_rest_applied_again():
    t, a, b, c, steps = _gemm_steps()
    s = sl.create_schedule(c)
    case = Case(s, [a, b], [c], t)
    for step in steps:
        step(s)
    final = _lowered(case)
    s.undo(7)
    assert len(s.records) == len(steps) - 7
    for step in steps[-7:]:
        step(s)
    assert _lowered(case) == final


def test_a_copy_keeps_the_tensors_a_primitive_made():
    case = _chain()
    s, cached = case.s, case.held["AA"]
    s[cached].compute_at(s[case.held["B"]], case.held["B"].op.axis[0])
    copy = s.copy()
    assert copy[cached].name == "A.global" and copy[case.held["B"]].name == "B"
    copy[cached].compute_root()
    assert _lowered(Case(copy, case.inputs, case.outputs)) != _lowered(case)
    check(copy, case.inputs, case.outputs, case.sizes)
