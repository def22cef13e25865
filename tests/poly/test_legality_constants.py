"""Legality asks isl nothing about a schedule dimension both statements of a dependence hold
at one constant (most of a padded schedule's): it orders no pair and carries none."""

from __future__ import annotations

from types import SimpleNamespace

import islpy as isl
import pytest

from schedlang.poly import legality


@pytest.fixture
def asked(monkeypatch) -> list[int]:
    """The schedule dimensions legality asks isl about, in order."""
    dims: list[int] = []
    relation = legality.dim_relation

    def spy(n, d, op):
        dims.append(d)
        return relation(n, d, op)

    monkeypatch.setattr(legality, "dim_relation", spy)
    return dims


def _statement(sched: str) -> SimpleNamespace:
    m = isl.Map(sched)
    n = m.dim(isl.dim_type.out)
    return SimpleNamespace(sched=m, template=[("const", 0)] * n, stmt=SimpleNamespace(role="init"))


def test_a_shared_constant_dimension_is_not_checked(asked):
    src = _statement("{ S0[i] -> [0, i, 5] : 0 <= i < 9 }")
    dst = _statement("{ S1[j] -> [0, j, 5] : 0 <= j < 9 }")
    dep = isl.Map("{ S0[i] -> S1[i + 1] : 0 <= i < 8 }")
    problems: list[str] = []
    legality._check_pair(None, dep, src, dst, set(), problems)
    assert problems == []  # S1[i + 1] runs after S0[i]: ordered at the loop
    assert set(asked) == {1}


def test_a_constant_that_orders_the_pair_is_checked(asked):
    src = _statement("{ S0[i] -> [0, i, 5] : 0 <= i < 9 }")
    dst = _statement("{ S1[j] -> [1, j, 5] : 0 <= j < 9 }")
    dep = isl.Map("{ S0[i] -> S1[i] : 0 <= i < 9 }")
    problems: list[str] = []
    legality._check_pair(None, dep, src, dst, set(), problems)
    assert problems == [] and asked == [0, 0]  # "<" then "=", and no pair is tied after
