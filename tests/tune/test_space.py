"""Knobs and spaces: the choices each kind of knob offers, configurations numbered and named
by their values, and the checks that keep a template's space fixed."""

from __future__ import annotations

import pytest

import schedlang as sl
from schedlang.tune import Config, Space, TuneError
from schedlang.tune.knobs import split_choices


def test_split_policies_list_the_sizes_each_allows():
    assert split_choices("t", 12, 2, "factors", None, None, None) == (
        (-1, 1), (-1, 2), (-1, 3), (-1, 4), (-1, 6), (-1, 12),
    )  # fmt: skip
    assert split_choices("t", 12, 2, "power2", None, None, None) == (
        (-1, 1), (-1, 2), (-1, 4), (-1, 8),
    )  # fmt: skip
    verbose = split_choices("t", 12, 2, "verbose", 6, None, None)
    assert [c[1] for c in verbose] == [1, 2, 3, 4, 6]
    three = split_choices("t", 8, 3, "factors", None, None, None)
    assert (-1, 2, 4) in three and (-1, 4, 4) not in three  # inner sizes multiply to <= 8
    assert all(8 % (a * b) == 0 for _, a, b in three)
    kept = split_choices("t", 64, 2, "power2", None, None, lambda e: e.size[-1] >= 16)
    assert [c[1] for c in kept] == [16, 32, 64]


def test_split_refusals_name_the_knob():
    with pytest.raises(TuneError, match="split 't': unknown policy 'halves'"):
        split_choices("t", 8, 2, "halves", None, None, None)
    with pytest.raises(TuneError, match="split 't': the axis has a symbolic extent"):
        split_choices("t", None, 2, "factors", None, None, None)
    with pytest.raises(TuneError, match="num_outputs must be an integer >= 2"):
        split_choices("t", 8, 1, "factors", None, None, None)
    with pytest.raises(TuneError, match=r"candidate \[4\] has not 2 sizes"):
        split_choices("t", 8, 2, "candidate", None, [[4]], None)
    with pytest.raises(TuneError, match="no sizes are left"):
        split_choices("t", 8, 2, "power2", None, None, lambda e: False)


def _algorithm(n=37):
    a = sl.placeholder((n, n), name="A")
    b = sl.compute((n, n), lambda i, j: a[j, i] * 2.0, name="B")
    return a, b


def test_defining_finds_the_space_and_gives_the_first_choices():
    a, b = _algorithm()
    s = sl.create_schedule(b)
    space = Space()
    cfg = Config(space)
    outer, inner = cfg.split("tile", s[b], s[b].op.axis[1])
    assert cfg.is_fallback
    assert cfg.choice("unroll", [False, True]) is False
    assert cfg.order("order", ["x", "y", "z"]) == ["x", "y", "z"]
    cfg.define_annotate("ann", [outer, inner], policy="try_unroll_vec")
    assert [k.name for k in space] == ["tile", "unroll", "order", "ann"]
    assert len(space) == 6 * 2 * 6 * 9  # powers of two up to 37, 2, 3!, 3^2
    assert cfg["tile"].size == [-1, 1]
    assert "Split(policy=power2, extent=37, parts=2)" in str(space)


def test_a_configuration_is_numbered_and_named_by_its_values():
    space = Space()
    cfg = Config(space)
    cfg.define_knob("a", [1, 2, 3])
    cfg.define_knob("b", ["x", "y"])
    cfg.define_split("c", 16, num_outputs=3, policy="power2", max_factor=4)
    for number in range(len(space)):
        values = space.values(number)
        assert space.number_of(values) == number
    assert space.values(0) == {"a": 1, "b": "x", "c": [-1, 1, 1]}
    assert space.values(len(space) - 1)["a"] == 3  # the first knob varies slowest
    with pytest.raises(TuneError, match="outside the space"):
        space.values(len(space))
    with pytest.raises(TuneError, match="knob 'b' has no choice 'z'"):
        space.number_of({"a": 1, "b": "z", "c": [-1, 1, 1]})
    with pytest.raises(TuneError, match=r"no value for knob\(s\) 'c'"):
        space.number_of({"a": 1, "b": "x"})


def test_a_chosen_configuration_applies_its_entities():
    a, b = _algorithm(40)
    space = Space()
    Config(space).define_split("tile", b.op.axis[0], num_outputs=2)
    number = space.number_of({"tile": [-1, 8]})
    cfg = Config(space, space.indices(number))
    cfg.define_split("tile", b.op.axis[0], num_outputs=2)
    s = sl.create_schedule(b)
    outer, inner = cfg["tile"].apply(s, b, s[b].op.axis[0])
    assert "factor=8" in str(s)
    assert cfg.knobs == {"tile": [-1, 8]}


def test_a_template_must_define_the_same_knobs_each_time():
    space = Space()
    Config(space).define_knob("a", [1, 2])
    again = Config(space, {"a": 1})
    with pytest.raises(TuneError, match="knob 'a' is defined with other choices"):
        again.define_knob("a", [1, 2, 4])
    twice = Config(Space())
    twice.define_knob("a", [1])
    with pytest.raises(TuneError, match="defines knob 'a' twice"):
        twice.define_knob("a", [1])
    with pytest.raises(TuneError, match="no knob 'b' is defined"):
        twice["b"]  # noqa: B018


def test_reorder_and_annotate_entities_apply_to_a_stage():
    a, b = _algorithm(32)
    s = sl.create_schedule(b)
    i, j = s[b].op.axis
    space = Space()
    Config(space).define_reorder("order", [i, j], policy="all")
    Config(space).define_annotate("ann", [i, j], policy="try_unroll")
    cfg = Config(
        space, space.indices(space.number_of({"order": [1, 0], "ann": ["none", "unroll"]}))
    )
    cfg.define_reorder("order", [i, j], policy="all")
    cfg.define_annotate("ann", [i, j], policy="try_unroll")
    cfg["order"].apply(s, b, [i, j])
    cfg["ann"].apply(s, b, [i, j])
    text = str(s)
    assert "reorder(s[B].op.axis[1], s[B].op.axis[0])" in text
    assert "unroll(s[B].op.axis[1])" in text
    with pytest.raises(TuneError, match="reorder 'r': policy 'some' unknown"):
        Config(Space()).define_reorder("r", [i, j], policy="some")
    with pytest.raises(TuneError, match="annotate 'x': policy 'bind' unknown"):
        Config(Space()).define_annotate("x", [i], policy="bind")


def test_a_split_of_a_split_axis_knows_its_extent():
    a, b = _algorithm(100)
    s = sl.create_schedule(b)
    outer, _ = s[b].split(s[b].op.axis[0], factor=10)
    space = Space()
    Config(space).split("t", s[b], outer, policy="factors")
    assert [c[1] for c in space.knobs["t"].choices] == [1, 2, 5, 10]


def test_a_symbolic_axis_needs_candidates():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] + 1.0, name="B")
    s = sl.create_schedule(b)
    with pytest.raises(TuneError, match="symbolic extent; give the sizes"):
        Config(Space()).split("t", s[b], s[b].op.axis[0])
    space = Space()
    Config(space).split("t", s[b], s[b].op.axis[0], candidates=[[-1, 32], [-1, 64]])
    assert len(space) == 2
