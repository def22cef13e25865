"""Which configuration to try next: grid, random, or optuna's samplers.

A search proposes configuration numbers (`ask`) and hears how each went (`tell`: its time, or
None where it was illegal, failed or wrong). It never proposes a number twice; the runner
tells it the trials a log already holds before it asks (`seen`), so a search resumed from a
log goes on where it stopped. Optuna's TPE models each knob as an integer where its choices
are ordered numbers (a split's sizes, tile widths) and as a category otherwise; it proposes
several configurations before their results are in, with the "constant liar" for the pending
ones, so that parallel compiles do not all try the same region.
"""

from __future__ import annotations

import abc
import math
import warnings

import numpy as np

from .knobs import Split, TuneError
from .space import Space

SEARCHES = ("grid", "random", "optuna")


def make_search(search: object, space: Space, seed: int) -> Search:
    """The search `search` names ("grid", "random", "optuna"), or an optuna sampler."""
    if search == "grid":
        return Grid(space)
    if search == "random":
        return Random(space, seed)
    if search == "optuna" or type(search).__module__.startswith("optuna"):
        return Optuna(space, seed, None if search == "optuna" else search)
    raise TuneError(f"unknown search {search!r}; use one of {SEARCHES} or an optuna sampler")


class Search(abc.ABC):
    def __init__(self, space: Space) -> None:
        self.space = space
        self.taken: set[int] = set()

    @property
    def exhausted(self) -> bool:
        return len(self.taken) >= len(self.space)

    def ask(self) -> int | None:
        """The next configuration to try; None once every one has been."""
        if self.exhausted:
            return None
        number = self._propose()
        self.taken.add(number)
        return number

    def seen(self, number: int, seconds: float | None) -> None:
        """A trial made before this search started (read from a log)."""
        if number not in self.taken:
            self.taken.add(number)
            self._seen(number, seconds)

    def tell(self, number: int, seconds: float | None) -> None:  # noqa: B027
        """How a configuration this search proposed went (grid and random need not know)."""

    def _seen(self, number: int, seconds: float | None) -> None:  # noqa: B027
        """A trial made before the search started (grid and random only skip it)."""

    @abc.abstractmethod
    def _propose(self) -> int:
        """A configuration not yet taken (the space is not exhausted)."""


class Grid(Search):
    """Every configuration in the space's order."""

    def __init__(self, space: Space) -> None:
        super().__init__(space)
        self._next = 0

    def _propose(self) -> int:
        while self._next in self.taken:
            self._next += 1
        return self._next


class Random(Search):
    """Configurations drawn uniformly without repeats (seeded)."""

    def __init__(self, space: Space, seed: int) -> None:
        super().__init__(space)
        self._rng = np.random.default_rng(seed)

    def _propose(self) -> int:
        size = len(self.space)
        if len(self.taken) * 2 > size:  # dense: draw among the untaken
            untaken = np.setdiff1d(np.arange(size), np.fromiter(self.taken, np.int64))
            return int(self._rng.choice(untaken))
        while True:
            number = int(self._rng.integers(size))
            if number not in self.taken:
                return number


class Optuna(Search):
    """An optuna study over the knobs' choice indices (TPE by default, seeded)."""

    def __init__(self, space: Space, seed: int, sampler=None) -> None:
        super().__init__(space)
        with warnings.catch_warnings():  # its tqdm.auto warns in Jupyter without ipywidgets
            warnings.simplefilter("ignore")
            import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        if sampler is None:
            with warnings.catch_warnings():  # constant_liar is marked experimental
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                sampler = optuna.samplers.TPESampler(
                    seed=seed, constant_liar=True, n_startup_trials=min(10, len(space))
                )
        self._optuna = optuna
        self._study = optuna.create_study(sampler=sampler, direction="minimize")
        self._trials: dict[int, object] = {}  # number -> the optuna trial awaiting its result
        self._values: dict[int, float | None] = {}  # number -> log(seconds), None: no time
        self._distributions = {
            knob.name: (
                optuna.distributions.IntDistribution(0, len(knob) - 1)
                if _ordered(knob)
                else optuna.distributions.CategoricalDistribution(list(range(len(knob))))
            )
            for knob in space
        }
        self._fallback = Random(space, seed)

    def _propose(self) -> int:
        for _ in range(50):
            trial = self._study.ask(self._distributions)
            number = self.space.number(trial.params)
            if number not in self.taken:
                self._trials[number] = trial
                return number
            # a point already tried gets no second measurement: the sampler hears its result
            # again (a failure for one that had none, or is still being measured)
            value = self._values.get(number)
            if value is None:
                self._study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
            else:
                self._study.tell(trial, value)
        self._fallback.taken = self.taken
        return self._fallback._propose()

    def tell(self, number: int, seconds: float | None) -> None:
        self._values[number] = None if seconds is None else math.log(seconds)
        trial = self._trials.pop(number, None)
        if trial is None:
            self._seen(number, seconds)
        elif seconds is None:
            self._study.tell(trial, state=self._optuna.trial.TrialState.FAIL)
        else:
            self._study.tell(trial, math.log(seconds))

    def _seen(self, number: int, seconds: float | None) -> None:
        self._values[number] = None if seconds is None else math.log(seconds)
        if seconds is None:
            return  # optuna learns nothing from a failure it did not propose
        trial = self._optuna.trial.create_trial(
            params=self.space.indices(number),
            distributions=self._distributions,
            value=math.log(seconds),
        )
        self._study.add_trial(trial)


def _ordered(knob) -> bool:
    """Whether the choices are numbers (or sizes) in increasing order: then neighbours in the
    index are neighbours in effect, which TPE's integer model uses."""
    if isinstance(knob, Split):
        return len(knob.choices[0]) == 2
    values = knob.choices
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return False
    return all(a < b for a, b in zip(values, values[1:]))
