"""AutoTVM's tuning API on schedlang's tuner (`schedlang.tune`).

``@autotvm.template("name")`` templates that call ``autotvm.get_config()``, ``define_split``,
``define_knob`` and ``cfg["tile"].apply(...)`` define a schedlang `Config`'s knobs; tasks,
tuners, ``measure_option``, ``callback.log_to_file`` and ``apply_history_best`` map onto
``sl.tune.run`` and its JSON-lines log. The tuners differ only in their search: grid and
random are schedlang's; XGBoost's and the genetic tuner map onto optuna's TPE, a model-based
search of the same kind. Every candidate is checked against the reference evaluator, which
AutoTVM did only when asked.
"""

from __future__ import annotations

from . import callback, measure, record, task, tuner
from .measure import LocalBuilder, LocalRunner, measure_option
from .record import ApplyHistoryBest, apply_history_best
from .task import get_config, template

__all__ = [
    "ApplyHistoryBest",
    "LocalBuilder",
    "LocalRunner",
    "apply_history_best",
    "callback",
    "get_config",
    "measure",
    "measure_option",
    "record",
    "task",
    "template",
    "tuner",
]
