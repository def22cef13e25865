"""The tuning log: one JSON line per trial, and what is read back from it.

A line holds everything needed to trust and replay a trial without the process that made it:
the task's key (algorithm, template, space, target and device), the template's name and
arguments, the knobs' values, the schedule as the Python that makes it, the status, the time,
the device and the versions of what built it. Lines are appended and flushed one by one, so a
run that is stopped keeps what it measured.

A log is a file like any other: a line cut short by a crash, bytes a failing disk changed, an
edit by hand. Each line is checked on reading (JSON of a trial, each field of its type, a
status schedlang writes, an ok trial's time a positive number) and one that fails is skipped
with a warning naming the file and line: never fatal to a run, and never chosen as the best.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path

from ..errors import entry_point, warn
from .knobs import TuneError

STATUSES = ("ok", "illegal", "wrong", "failed")


@dataclass(frozen=True)
class Trial:
    key: str
    template: str
    args: str  # the template's arguments as JSON ([args, kwargs]), or their repr
    number: int
    knobs: dict
    status: str
    seconds: float | None
    error: str
    build_s: float  # in a compile process: the template, isl, LLVM (and ptxas)
    measure_s: float  # loading, checking against the reference and timing
    text: str  # the schedule as the Python that makes it
    device: str
    target: str
    versions: dict = field(default_factory=dict)
    when: str = ""
    module: str = ""  # where the template was defined, imported to find it again

    def json(self) -> str:
        return json.dumps(asdict(self))

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @entry_point
    def schedule(self, *args: object, **kwargs: object) -> tuple:
        """``(schedule, args)`` of this trial's knobs, made by its template again (found by
        name in this process, or imported from its module); `args` replace the logged
        arguments where those are not JSON."""
        from .template import find

        template = find(self.template, self.module)
        if template is None:
            raise TuneError(
                f"template {self.template!r} is not defined in this process; define (or "
                "import) it first, or replay the logged schedule text (trial.text)"
            )
        if not args and not kwargs:
            try:
                args, kwargs = json.loads(self.args)
            except json.JSONDecodeError:
                raise TuneError(
                    f"the arguments of template {self.template!r} were logged as "
                    f"{self.args} (not JSON); pass them: trial.schedule(*args)"
                ) from None
        return template(*args, **kwargs).instantiate(self.knobs)

    @entry_point
    def build(self, target: str | None = None):
        """This trial's kernel, built for its target (or `target`)."""
        from ..build import build

        s, args = self.schedule()
        return build(s, args, target=target or self.target)


class Log:
    """Trials, in the order they were made."""

    def __init__(
        self,
        trials: Iterable[Trial] = (),
        path: str | Path | None = None,
        lines: Iterable[int] | None = None,
    ) -> None:
        self.trials = list(trials)
        self.path = None if path is None else Path(path)
        # the line of `path` each trial was read from (None: made in this process)
        self.lines = None if lines is None else list(lines)

    def __len__(self) -> int:
        return len(self.trials)

    def __iter__(self) -> Iterator[Trial]:
        return iter(self.trials)

    def counts(self) -> dict[str, int]:
        return {s: sum(t.status == s for t in self.trials) for s in STATUSES}

    @entry_point
    def best(self, template: object = None) -> Trial:
        """The fastest trial that ran and matched the reference (the first of equal ones), of
        `template` (a name or a template) when given; of the latest task in the log."""
        trials = self.trials
        if template is not None:
            name = template if isinstance(template, str) else template.name
            trials = [t for t in trials if t.template == name]
        trials = Log(trials).latest().trials
        good = [t for t in trials if t.ok]
        if not good:
            counts = Log(trials).counts()
            raise TuneError(
                f"no trial ran correctly ({', '.join(f'{n} {s}' for s, n in counts.items())}); "
                "nothing to choose"
            )
        return min(good, key=lambda t: t.seconds)

    def latest(self) -> Log:
        """The trials of the task tuned last (a log file may hold several tasks')."""
        key = self.trials[-1].key if self.trials else None
        return Log([t for t in self.trials if t.key == key], self.path)

    def top(self, count: int = 10) -> list[Trial]:
        """The fastest correct trials of the latest task, fastest first."""
        good = (t for t in self.latest().trials if t.ok)
        return sorted(good, key=lambda t: t.seconds)[:count]

    @entry_point
    def plot(self):
        """The latest task's trials: each one's time and the best so far, in trial order (a
        matplotlib Figure)."""
        from .plots import convergence

        return convergence(self.latest())

    @entry_point
    def heatmap(self, x: str, y: str):
        """The best time of the latest task at each pair of values of knobs `x` and `y` (a
        matplotlib Figure)."""
        from .plots import heatmap

        return heatmap(self.latest(), x, y)

    def __str__(self) -> str:
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items())
        lines = [f"{len(self)} trials: {counts}"]
        for t in self.top(5):
            lines.append(f"  {_ms(t.seconds):>10}  {_knobs(t.knobs)}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from ..htmlkit import escape, page, table

        rows = [[_ms(t.seconds), escape(_knobs(t.knobs))] for t in self.top(10)]
        counts = ", ".join(f"{n} {s}" for s, n in self.counts().items())
        title = f"{len(self)} trials: {escape(counts)}; the fastest:"
        return page(title, table(["time", "knobs"], rows, numeric=[True]))


@entry_point
def load(path: str | Path) -> Log:
    """The trials logged at `path` (JSON lines; a line that is not a trial, such as one cut
    short when a run was killed, is skipped with a warning)."""
    path = Path(path)
    found = _read(path)
    return Log([t for _, t in found], path, [line for line, _ in found])


def skipped(path: Path | None, line: int | None, why: str) -> None:
    """Warn that the trial at `line` of the log `path` is not used, and why."""
    where = f"line {line} of the tuning log {path}" if line else f"a trial of {path}"
    warn(f"{where} is skipped: {why}; tuning goes on without it (it can be deleted)")


def _read(path: Path) -> list[tuple[int, Trial]]:
    """Each trial of `path` with its line number; lines that are not trials are skipped."""
    if not path.exists():
        return []
    trials = []
    for line, raw in enumerate(path.read_bytes().splitlines(), 1):
        if not raw.strip():
            continue
        try:
            trials.append((line, _trial(raw)))
        except ValueError as error:
            skipped(path, line, str(error))
    return trials


_TYPES = {
    "key": str,
    "template": str,
    "args": str,
    "number": int,
    "knobs": dict,
    "status": str,
    "seconds": (int, float, type(None)),
    "error": str,
    "build_s": (int, float),
    "measure_s": (int, float),
    "text": str,
    "device": str,
    "target": str,
    "versions": dict,
    "when": str,
    "module": str,
}


def _trial(raw: bytes) -> Trial:
    """The trial a log's line holds; a ValueError that says what is wrong with it."""
    try:
        record = json.loads(raw.decode())
    except UnicodeDecodeError:
        raise ValueError("it is not text (binary bytes)") from None
    except json.JSONDecodeError:
        raise ValueError("it is not JSON (cut short by a stopped run, or changed)") from None
    if not isinstance(record, dict):
        raise ValueError(f"it holds a JSON {type(record).__name__}, not a trial")
    names = {f.name for f in fields(Trial)}
    unknown = sorted(set(record) - names)
    missing = [
        f.name
        for f in fields(Trial)
        if f.name not in record and f.default is MISSING and f.default_factory is MISSING
    ]
    if unknown or missing:
        raise ValueError(f"its fields differ from a trial's (unknown {unknown}, missing {missing})")
    for name, value in record.items():
        if not isinstance(value, _TYPES[name]) or isinstance(value, bool):
            raise ValueError(f"its {name} is {value!r}, not a {_type_name(_TYPES[name])}")
    trial = Trial(**record)
    if trial.status not in STATUSES:
        raise ValueError(f"its status is {trial.status!r}, not one of {', '.join(STATUSES)}")
    if trial.number < 0:
        raise ValueError(f"its configuration number is {trial.number}, not >= 0")
    for name in ("seconds", "build_s", "measure_s"):
        value = getattr(trial, name)
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise ValueError(f"its {name} is {value!r}, not a time (a number >= 0)")
    if trial.ok and not trial.seconds:
        raise ValueError(f"it ran correctly in {trial.seconds!r} seconds, which no run takes")
    return trial


def _type_name(types: type | tuple[type, ...]) -> str:
    kinds = types if isinstance(types, tuple) else (types,)
    names = {int: "number", float: "number", str: "string", dict: "JSON object"}
    return " or ".join(dict.fromkeys(names.get(k, "null") for k in kinds))


def append(path: Path | None, trial: Trial) -> None:
    if path is None:
        return
    with path.open("a+b") as out:
        out.seek(0, 2)
        if out.tell():  # a line cut short by a killed run is ended, not continued
            out.seek(-1, 2)
            if out.read(1) != b"\n":
                out.write(b"\n")
        out.write((trial.json() + "\n").encode())


def _ms(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "-"
    return f"{seconds * 1e3:.4g} ms"


def _knobs(knobs: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in knobs.items())
