"""AutoTVM's ``apply_history_best``: templates called inside it take the best configuration
a tuning log holds for their arguments."""

from __future__ import annotations

from ...tune.log import Log, load
from ...tune.space import Config

_contexts: list[ApplyHistoryBest] = []


class ApplyHistoryBest:
    """A context in which templates use the best logged configuration (the innermost context
    that knows the template and its arguments wins)."""

    def __init__(self, records) -> None:
        if records is None:  # AutoTVM's tutorials pass None when they tuned nothing
            self.log = Log()
        else:
            self.log = records if isinstance(records, Log) else load(records)

    def __enter__(self) -> ApplyHistoryBest:
        _contexts.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _contexts.remove(self)

    def knobs(self, task) -> dict | None:
        """The fastest logged knobs of `task` (its template and arguments) for the current
        target's kind, that name a configuration of its space as it is now."""
        from ...tune.knobs import TuneError
        from ..target import Target

        arguments = task.arguments_json()
        current = Target.current()
        kind = None if current is None else current.schedlang.split()[0]
        mine = [
            t
            for t in self.log
            if t.ok and t.template == task.name and t.args == arguments
            and (kind is None or t.target.split()[0] == kind)
        ]  # fmt: skip
        for trial in sorted(mine, key=lambda t: t.seconds):
            try:
                task.space.number_of(trial.knobs)
            except TuneError:  # logged by another version of the template
                continue
            return trial.knobs
        return None

    def query(self, target, workload) -> Config:
        """The best logged configuration of `workload` (a task's ``(name, *args)``) for
        `target`'s kind, or the fallback (each knob's first choice) where there is none."""
        from ...tune.template import Task, find
        from ..target import as_target

        name, *args = workload
        template = find(name)
        if template is None:
            from ...tune.knobs import TuneError

            raise TuneError(f"no template is registered as {name!r} (@autotvm.template)")
        task = Task(template, tuple(args), {})
        with as_target(target):
            knobs = self.knobs(task)
        number = 0 if knobs is None else task.space.number_of(knobs)
        return task.config(number)


def apply_history_best(records) -> ApplyHistoryBest:
    return ApplyHistoryBest(records)


def active() -> bool:
    return bool(_contexts)


def chosen_knobs(task) -> dict | None:
    """The best logged knobs for `task` in the enclosing contexts, or None."""
    for context in reversed(_contexts):
        knobs = context.knobs(task)
        if knobs is not None:
            return knobs
    return None
