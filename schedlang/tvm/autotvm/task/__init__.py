"""AutoTVM's templates and tasks: ``@autotvm.template``, ``get_config``, ``task.create``, and
TOPI's tunable computes and schedules (`topi_integration`, with their fallback configurations:
`space`, `dispatcher`).

Called outside tuning, a template gives the schedule of the best configuration that the
enclosing ``apply_history_best`` knows for its arguments, or, as AutoTVM's fallback, that of
the first choice of every knob.
"""

from __future__ import annotations

import functools
import logging

from ....tune.space import Config, Space
from ....tune.template import Task as TuneTask
from ....tune.template import Template, current, find
from ...target import as_target
from . import dispatcher, space, topi_integration
from .dispatcher import DispatchContext, FallbackContext, clear_fallback_cache
from .space import FallbackConfigEntity
from .topi_integration import (
    args_to_workload,
    get_workload,
    register_topi_compute,
    register_topi_schedule,
)

logger = logging.getLogger("autotvm")


def template(name: str, func=None):
    """``@autotvm.template("tutorial/matmul")``: register a template that reads its knobs
    from ``autotvm.get_config()`` and returns ``(schedule, args)``."""

    def register(function):
        registered = Template(function, name, takes_config=False)

        @functools.wraps(function)
        def dispatch(*args, **kwargs):
            from ..record import active, chosen_knobs

            if current() is not None:  # inside a template being tuned: its config holds
                return function(*args, **kwargs)
            task = registered(*args, **kwargs)
            knobs = chosen_knobs(task)
            if knobs is not None:
                return task.instantiate(knobs)
            if active():
                logger.warning(
                    "Cannot find config for template %s%s: the fallback configuration "
                    "(each knob's first choice) is used",
                    name,
                    args,
                )
            return registered.run(Config(Space()), args, kwargs)

        dispatch.template = registered
        return dispatch

    return register(func) if func is not None else register


def get_config() -> Config:
    """The config of the template being run (a fallback one outside tuning)."""
    return current() or Config(Space())


class Task:
    """A template with arguments and a target (AutoTVM's ``Task``)."""

    def __init__(self, name: str, args: tuple, target) -> None:
        found = find(name)
        if found is None:
            from ....tune.knobs import TuneError

            raise TuneError(f"no template is registered as {name!r} (@autotvm.template)")
        self.name = name
        self.args = tuple(args)
        self.target = as_target(target)
        self.task = TuneTask(found, self.args, {})

    @property
    def config_space(self) -> Space:
        return self.task.space

    @property
    def workload(self) -> tuple:
        """AutoTVM's name of the task: its template's name and arguments."""
        return (self.name, *self.args)

    def __repr__(self) -> str:
        return f"Task(func_name={self.name}, args={self.args}, target={self.target})"


def create(task_name: str, args: tuple, target=None, target_host=None) -> Task:
    """AutoTVM's ``autotvm.task.create``."""
    return Task(task_name, args, target)


__all__ = [
    "DispatchContext",
    "FallbackConfigEntity",
    "FallbackContext",
    "Task",
    "args_to_workload",
    "clear_fallback_cache",
    "create",
    "dispatcher",
    "get_config",
    "get_workload",
    "register_topi_compute",
    "register_topi_schedule",
    "space",
    "template",
    "topi_integration",
]
