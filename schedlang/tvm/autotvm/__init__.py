"""AutoTVM's tuning API on schedlang's tuner (`schedlang.tune`).

``@autotvm.template("name")`` templates that call ``autotvm.get_config()``, ``define_split``,
``define_knob`` and ``cfg["tile"].apply(...)`` define a schedlang `Config`'s knobs; tasks,
tuners, ``measure_option``, ``callback.log_to_file`` and ``apply_history_best`` map onto
``sl.tune.run`` and its JSON-lines log. The tuners differ only in their search: grid and
random are schedlang's; XGBoost's and the genetic tuner map onto optuna's TPE, a model-based
search of the same kind. Every candidate is checked against the reference evaluator, which
AutoTVM did only when asked.

TOPI's tunable operators (``register_topi_compute`` and ``register_topi_schedule``) run with
AutoTVM's fallback configurations: the tiles TOPI chooses from the workload's shape.
"""

from __future__ import annotations

from . import callback, env, measure, record, task, tophub, tuner
from .env import GLOBAL_SCOPE
from .measure import LocalBuilder, LocalRunner, measure_option
from .record import ApplyHistoryBest, apply_history_best
from .task import (
    DispatchContext,
    FallbackContext,
    get_config,
    register_topi_compute,
    register_topi_schedule,
    template,
)

__all__ = [
    "GLOBAL_SCOPE",
    "ApplyHistoryBest",
    "DispatchContext",
    "FallbackContext",
    "LocalBuilder",
    "LocalRunner",
    "apply_history_best",
    "callback",
    "env",
    "get_config",
    "measure",
    "measure_option",
    "record",
    "register_topi_compute",
    "register_topi_schedule",
    "task",
    "template",
    "tophub",
    "tuner",
]
