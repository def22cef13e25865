"""AutoTVM's ``apply_history_best``: templates called inside it take the best configuration
a tuning log holds for their arguments."""

from __future__ import annotations

from ...tune.log import Log, load

_contexts: list[ApplyHistoryBest] = []


class ApplyHistoryBest:
    """A context in which templates use the best logged configuration (the innermost context
    that knows the template and its arguments wins)."""

    def __init__(self, records) -> None:
        self.log = records if isinstance(records, Log) else load(records)

    def __enter__(self) -> ApplyHistoryBest:
        _contexts.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _contexts.remove(self)

    def knobs(self, task) -> dict | None:
        arguments = task.arguments_json()
        mine = [t for t in self.log if t.template == task.name and t.args == arguments]
        good = [t for t in mine if t.ok]
        return min(good, key=lambda t: t.seconds).knobs if good else None


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
