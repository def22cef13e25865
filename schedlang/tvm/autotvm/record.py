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
