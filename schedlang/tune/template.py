"""Schedule templates and tasks: a template is a schedule written once with knobs; a task is a
template with its arguments (the sizes, the dtype), which fixes its algorithm and its space.

Two forms, one mechanism. schedlang's: ``@sl.tune.template`` on a function whose first
parameter is the `Config`; AutoTVM's: ``@autotvm.template("name")`` on a function that asks
``autotvm.get_config()``. Either returns ``(schedule, args)``. While a task runs its template,
the config is also the *current* one (`current`), which is what ``get_config`` reads.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import importlib
import inspect
import json
import sys
import types
from collections.abc import Callable, Mapping

from ..errors import entry_point
from .knobs import TuneError
from .space import Config, Space

_current: contextvars.ContextVar[Config | None] = contextvars.ContextVar("config", default=None)
_registry: dict[str, Template] = {}


def current() -> Config | None:
    """The config of the template running now (None outside one)."""
    return _current.get()


class Template:
    """A schedule function with knobs; calling it with arguments gives a `Task`."""

    def __init__(self, function: Callable, name: str | None, takes_config: bool) -> None:
        self.function = function
        self.name = name or f"{function.__module__}.{function.__qualname__}"
        self.takes_config = takes_config
        functools.update_wrapper(self, function)
        _registry[self.name] = self

    def __call__(self, *args: object, **kwargs: object) -> Task:
        return Task(self, args, kwargs)

    def run(self, config: Config, args: tuple, kwargs: Mapping) -> tuple:
        token = _current.set(config)
        try:
            made = self.function(*((config,) if self.takes_config else ()), *args, **kwargs)
        finally:
            _current.reset(token)
        if not (isinstance(made, (tuple, list)) and len(made) == 2):
            raise TuneError(
                f"template {self.name!r} returned {type(made).__name__}; a template returns "
                "(schedule, args), the schedule and the tensors of the kernel's arguments"
            )
        return made[0], list(made[1])

    def __reduce__(self):
        """By name where its module can be imported (so messages name the template's own
        file and line); by value otherwise (a notebook's or a script's), with the file name
        put back into its code, which cloudpickle leaves out."""
        module = sys.modules.get(self.function.__module__)
        if self.function.__module__ != "__main__" and getattr(module, self.__name__, None) is self:
            return find, (self.name, self.function.__module__)
        from ..errors import _cell_name

        filename = self.function.__code__.co_filename
        shown = _cell_name(filename) or filename  # a notebook's cell as IPython names it
        return _revived, (self.function, self.name, self.takes_config, shown)

    @functools.cached_property
    def source_digest(self) -> str:
        """What the template's code is, for the tuning cache: its source where Python can find
        it, else its name."""
        try:
            text = inspect.getsource(self.function)
        except (OSError, TypeError):
            text = self.name
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"<schedule template {self.name}>"


def _revived(function: Callable, name: str, takes_config: bool, filename: str) -> Template:
    function.__code__ = _refiled(function.__code__, filename)
    return Template(function, name, takes_config)


def _refiled(code: types.CodeType, filename: str) -> types.CodeType:
    consts = tuple(
        _refiled(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


def template(function: Callable | str | None = None, *, name: str | None = None):
    """``@sl.tune.template``: `function(cfg, *args)` returns ``(schedule, args)`` built with
    the knobs `cfg` defines. ``@sl.tune.template("name")`` also names it (as in a log)."""
    if isinstance(function, str):
        return lambda f: Template(f, function, takes_config=True)
    if function is None:
        return lambda f: Template(f, name, takes_config=True)
    return Template(function, name, takes_config=True)


def find(name: str, module: str = "") -> Template | None:
    """The template registered as `name` in this process, importing `module` (where it was
    defined) or else the modules the name starts with, when it is not registered yet: a
    template of a file, found by a compile process or a later program."""
    if name not in _registry and module and module != "__main__":
        with contextlib.suppress(ImportError):
            importlib.import_module(module)
    prefix = name
    while name not in _registry and "." in prefix:
        prefix = prefix.rpartition(".")[0]
        with contextlib.suppress(ImportError):
            importlib.import_module(prefix)
    return _registry.get(name)


class Task:
    """A template with its arguments: one algorithm, one space of schedules."""

    def __init__(self, template: Template, args: tuple, kwargs: Mapping) -> None:
        self.template = template
        self.args = tuple(args)
        self.kwargs = dict(kwargs)

    def __getstate__(self) -> dict:
        """What a compile process needs: the template and its arguments; it finds the space
        again itself."""
        return {"template": self.template, "args": self.args, "kwargs": self.kwargs}

    @functools.cached_property
    @entry_point
    def space(self) -> Space:
        """The knobs, found by running the template once (each knob at its first choice)."""
        space = Space()
        config = Config(space)
        made = self.template.run(config, self.args, self.kwargs)
        self._made = made
        self.flop = config.flop  # what `cfg.add_flop` declared (0: nothing)
        if not space.knobs:
            raise TuneError(f"template {self.template.name!r} defines no knob: nothing to tune")
        return space

    @property
    def made(self) -> tuple:
        """``(schedule, args)`` of the run that found the space (each knob's first choice):
        the algorithm and the kernel's arguments every configuration shares."""
        self.space  # noqa: B018 (runs the template once)
        return self._made

    @property
    def config_space(self) -> Space:  # AutoTVM's name
        return self.space

    def config(self, number: int) -> Config:
        return Config(self.space, self.space.indices(number))

    @entry_point
    def instantiate(self, config: int | Mapping[str, object]) -> tuple:
        """``(schedule, args)`` of one configuration: its number, or its knobs' values."""
        number = config if isinstance(config, int) else self.space.number_of(config)
        return self.template.run(self.config(number), self.args, self.kwargs)

    @property
    def name(self) -> str:
        return self.template.name

    def arguments_json(self) -> str:
        """The template's arguments as JSON, or their repr where JSON cannot say them."""
        try:
            return json.dumps([list(self.args), self.kwargs], sort_keys=True)
        except TypeError:
            return repr((self.args, self.kwargs))

    def algorithm_text(self) -> str:
        """The algorithm the template schedules, as canonical text (its outputs and their
        arguments, no schedule); the template's identity where that has no canonical text."""
        from ..schedule.canonical import Uncacheable, canonical_text
        from ..schedule.schedule import Schedule

        s, args = self.made
        try:
            return canonical_text(Schedule(s.roots), args)
        except Uncacheable:
            return f"{self.name} {self.arguments_json()}"

    def __repr__(self) -> str:
        shown = ", ".join([*map(repr, self.args), *(f"{k}={v!r}" for k, v in self.kwargs.items())])
        return f"Task({self.name}({shown}))"
