"""Trying many schedules for you: templates with knobs, searched, checked, timed and logged.

``@sl.tune.template`` marks a schedule written once with named choices; ``task = gemm(512,
512, 512)`` fixes its algorithm; ``log = sl.tune.run(task, trials=100)`` searches the space
(optuna's TPE, grid or random), compiling in parallel processes, refusing illegal points
through isl before any code is made, checking every kernel against the reference before its
time counts, and logging each trial as a JSON line; ``sl.tune.load(path).best()`` gives the
winner back, and ``.schedule()`` its schedule. AutoTVM's form of templates
(``cfg.define_split``, ``cfg["tile"].apply``) is the same `Config`, through
``schedlang.tvm.autotvm``.
"""

from __future__ import annotations

from .knobs import Invalid, TuneError
from .log import Log, Trial, load
from .pool import Compilers
from .runner import run
from .space import Config, Space
from .template import Task, Template, current, template

__all__ = [
    "Compilers",
    "Config",
    "Invalid",
    "Log",
    "Space",
    "Task",
    "Template",
    "Trial",
    "TuneError",
    "current",
    "load",
    "run",
    "template",
]
