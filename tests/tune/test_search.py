"""Searches propose every configuration at most once, seeded searches repeat themselves, and
a search told of earlier trials goes on from them."""

from __future__ import annotations

import pytest

from schedlang.tune import Config, Space, TuneError
from schedlang.tune.search import make_search


def _space() -> Space:
    space = Space()
    cfg = Config(space)
    cfg.define_split("tile", 64, policy="power2")  # 7 ordered choices
    cfg.define_knob("order", ["ij", "ji", "kk"])  # a category
    return space


def _drain(search) -> list[int]:
    asked = []
    while (number := search.ask()) is not None:
        asked.append(number)
        search.tell(number, 1e-3 * (1 + number % 5) if number % 4 else None)
    return asked


@pytest.mark.parametrize("name", ["grid", "random", "optuna"])
def test_every_configuration_once(name):
    space = _space()
    asked = _drain(make_search(name, space, seed=3))
    assert sorted(asked) == list(range(len(space)))


def test_grid_walks_the_space_in_order_and_skips_what_was_seen():
    search = make_search("grid", _space(), 0)
    search.seen(1, 0.5)
    assert [search.ask() for _ in range(3)] == [0, 2, 3]


@pytest.mark.parametrize("name", ["random", "optuna"])
def test_a_seeded_search_repeats_itself(name):
    first = [make_search(name, _space(), 7) for _ in range(2)]
    runs = []
    for search in first:
        asked = []
        for _ in range(12):
            number = search.ask()
            asked.append(number)
            search.tell(number, 1e-3 * (number + 1))
        runs.append(asked)
    assert runs[0] == runs[1]


def test_optuna_learns_from_seen_trials_and_does_not_repeat_them():
    space = _space()
    search = make_search("optuna", space, 0)
    for number in range(0, len(space), 2):
        search.seen(number, 1e-3 * (number + 1) if number % 3 else None)
    rest = _drain(search)
    assert sorted(rest) == list(range(1, len(space), 2))


def test_an_unknown_search_is_refused():
    with pytest.raises(TuneError, match="unknown search 'annealing'"):
        make_search("annealing", _space(), 0)
