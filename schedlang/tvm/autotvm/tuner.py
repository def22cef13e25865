"""AutoTVM's tuners on ``sl.tune.run``: ``GridSearchTuner`` and ``RandomTuner`` search as
their names say; ``XGBTuner`` and ``GATuner`` (a cost model, a genetic search) map onto optuna's
TPE, a model-based search. ``tune`` measures `n_trial` new configurations (as AutoTVM does,
whatever the log holds), logs each trial to the ``autotvm`` logger at DEBUG level, and writes
the log that ``callback.log_to_file`` names."""

from __future__ import annotations

import logging

from ...tune.runner import run
from .callback import log_to_file, progress_bar

logger = logging.getLogger("autotvm")


class Tuner:
    search = "optuna"

    def __init__(self, task, **_options: object) -> None:
        self.task = task
        self.best_config = None
        self.best_flops = 0.0
        self.log = None

    def tune(self, n_trial, measure_option=None, early_stopping=None, callbacks=(), **_):
        options = measure_option or {}
        runner, builder = options.get("runner"), options.get("builder")
        files = [c.file_out for c in callbacks if isinstance(c, log_to_file)]
        flop = _flop(self.task.task)
        counted = [0]

        def told(trial) -> None:
            counted[0] += 1
            flops = flop / trial.seconds if trial.ok and trial.seconds else 0.0
            if flops > self.best_flops:
                self.best_flops, self.best_config = flops, trial.knobs
            logger.debug(
                "No: %d\tGFLOPS: %.2f/%.2f\tresult: %s\t%s",
                counted[0],
                flops / 1e9,
                self.best_flops / 1e9,
                trial.status if trial.ok else f"{trial.status}: {trial.error.splitlines()[0]}",
                trial.knobs,
            )

        self.log = run(
            self.task.task,
            trials=n_trial,
            search=self.search,
            target=self.task.target.schedlang,
            log=files[0] if files else None,
            cache=False,
            workers=getattr(builder, "n_parallel", None),
            build_timeout=getattr(builder, "timeout", None),
            repeat=max(1, getattr(runner, "number", 4) * getattr(runner, "repeat", 1)),
            progress=any(isinstance(c, progress_bar) for c in callbacks),
            callback=told,
            patience=early_stopping,
        )
        return self.log


class GridSearchTuner(Tuner):
    search = "grid"


class RandomTuner(Tuner):
    search = "random"


class XGBTuner(Tuner):
    search = "optuna"


class GATuner(Tuner):
    search = "optuna"


def _flop(task) -> float:
    """The work of one run of the task's algorithm: as its template declares it, else as
    schedlang counts it."""
    from ...display.work import count_flops

    s, _ = task.made
    if task.flop:  # the template's own count (cfg.add_flop)
        return task.flop
    return float(count_flops(s.roots, {}))
