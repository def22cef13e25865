"""`sl.tune.run`: a task's space searched, each configuration built, checked and timed.

The loop: the search proposes configurations; compile processes build them in parallel
(`pool`); each built kernel is measured, one at a time per device, here (`measuring`) or on a
Dask cluster (`cluster`); every outcome is a trial appended to the log and told to the search.
On a GPU measuring overlaps the next compiles; on the CPU the compiles pause while kernels are
timed, as they would share its cores.

The log is also the cache. A run's trials carry a key made of the algorithm, the template (its
name, source and arguments), the space, the target and the device. A run that finds trials of
its key in the log starts from them: they are not measured again, the search is told of them,
and a run asking for no more trials than the log holds measures nothing at all and answers
from the log, the same answer each time.
"""

from __future__ import annotations

import gc
import hashlib
import math
import time
from concurrent.futures import FIRST_COMPLETED, wait
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import entry_point, warn
from .building import Built
from .knobs import TuneError
from .log import Log, Trial, append, load, skipped
from .progress import Progress
from .search import make_search

if TYPE_CHECKING:
    from .pool import Compilers


@entry_point
def run(
    task,
    trials: int | None = None,
    search: object = "optuna",
    target: str = "auto",
    log: str | Path | None = None,
    cache: bool = True,
    workers: int | Compilers | None = None,
    cluster: object = None,
    repeat: int = 10,
    seed: int = 0,
    sizes=None,
    timeout: float | None = None,
    progress: bool = True,
    callback=None,
    patience: int | None = None,
    build_timeout: float | None = 60.0,
) -> Log:
    """Search `task`'s space for its fastest schedule; the `Log` of its trials.

    `trials`: how many configurations to try in all, counting those the log already holds
    (default: the whole space for a grid search, else up to 200). `search`: "optuna" (TPE),
    "grid", "random", or an optuna sampler. `log`: the JSON-lines file of trials (default: one
    per task in schedlang's cache folder; none where the cache is off). `cache=False` measures
    again what the log holds. `workers`: how many compile processes (default: the usable
    cores), or `Compilers` kept from run to run. `cluster`: measure on Dask ("local", a
    scheduler address, or a ``distributed.Client``); by default here. `repeat`: timed runs per
    kernel. `sizes`: values of symbolic sizes. `timeout`: seconds after which no new
    configuration is started. `callback(trial)` hears each new trial. `patience`: trials
    without a better time after which no new configuration is started (AutoTVM's
    ``early_stopping``). `build_timeout`: seconds a configuration may take to build before its
    process is stopped and it fails (None: no limit).
    """
    from ..build import resolve_target

    _check_workers(workers)
    resolved = resolve_target(target)
    space = task.space
    if trials is None:
        trials = len(space) if search == "grid" else 200
    budget = min(int(trials), len(space))
    measurer = _measurer(task, resolved.name, cluster, seed, sizes, repeat)
    try:
        build_target = _build_target(resolved, measurer)
        device = measurer.device
        key = _key(task, build_target, device, sizes)
        path = _log_path(log, key)
        earlier = _earlier(load(path), key, space) if path and cache else []
        chooser = make_search(search, space, seed)
        for t in earlier:
            chooser.seen(t.number, t.seconds if t.ok else None)
        done = Log(earlier, path)
        left = budget - len({t.number for t in earlier})
        if left <= 0 or chooser.exhausted:
            return done
        measurer.start()
        shown = Progress(left, progress, f"tuning {task.name}")
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        where = (key, build_target, device, path)
        record = _Recorder(task, where, done, chooser, shown, callback, patience)
        try:
            with _objects_frozen():
                _loop(task, chooser, measurer, (workers, build_target, build_timeout), left,
                      deadline, record)  # fmt: skip
        finally:
            shown.close()
        return done
    finally:
        measurer.close()


def _loop(task, chooser, measurer, compiling, left, deadline, record) -> None:
    from . import pool as compile_pool

    workers, build_target, build_timeout = compiling
    owned = not isinstance(workers, compile_pool.Compilers)  # a count: this run's own
    compilers = compile_pool.Compilers(workers) if owned else workers
    job = compilers.job(task, build_target)
    overlap = measurer.overlaps_compiles
    window = 2 * compilers.count if overlap else compilers.count
    asked = 0
    try:
        builds, measures = set(), set()
        while True:
            if overlap or not builds:
                while (
                    asked < left
                    and len(builds) < window
                    and time.monotonic() < deadline
                    and not record.out_of_patience
                ):
                    number = chooser.ask()
                    if number is None:
                        break
                    builds.add(compilers.submit(job, number, build_timeout))
                    asked += 1
            if not builds and not measures:
                return
            finished, _ = wait(builds | measures, return_when=FIRST_COMPLETED)
            if not overlap and builds:
                finished, _ = wait(builds)  # measure once every compile of the batch is done
            _record_measured(measures, record)  # first: kernels handed over get a fresh best
            for future in finished & builds:
                builds.discard(future)
                built = future.result()
                if built.status != "built":
                    record(built, built.status, None, built.error, 0.0, None)
                    continue
                measured = measurer.submit(built, record.best)
                measured.built = built
                measures.add(measured)
            _record_measured(measures, record)  # and those measured here, before the next ask
    finally:
        if owned:
            compilers.close()
        else:
            compilers.drop(job)


@contextmanager
def _objects_frozen():
    """The objects alive when the loop starts left out of Python's full collections while it
    runs. This process holds the loop, the Dask client and, for a local cluster, its
    scheduler: each full collection walked all their objects with the interpreter lock held
    (65-210 ms, eight or nine times in a 10 s run on a GPU host), and the workers idled
    waiting for their next kernels. Frozen objects that die are still freed when nothing
    refers to them; only cycles among them wait for the end of the run."""
    first = gc.get_freeze_count() == 0  # objects frozen by someone else stay frozen
    gc.freeze()
    try:
        yield
    finally:
        if first:
            gc.unfreeze()


def _check_workers(workers) -> None:
    from .pool import Compilers

    if isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1:
        return
    if workers is not None and not isinstance(workers, Compilers):
        raise TuneError(
            f"workers={workers!r}: give how many compile processes to start (at least 1), "
            "or the sl.tune.Compilers to build with"
        )


def _record_measured(measures: set, record) -> None:
    for future in [f for f in measures if f.done()]:
        measures.discard(future)
        record(future.built, *future.result())


class _Recorder:
    """Each outcome as a trial: logged, told to the search, counted, and reported when it is
    a finding (a wrong result, a failure)."""

    def __init__(self, task, where, log, chooser, shown, callback, patience) -> None:
        self.task = task
        # the run's key, target, the device of trials never measured (refused before any
        # code was made) and the log's file
        self.key, self.target, self.device, self.path = where
        self.patience = patience
        self.best = math.inf
        self.since_best = 0  # trials since the best time fell
        self.log, self.chooser, self.shown, self.callback = log, chooser, shown, callback
        self.versions = _versions()

    def __call__(self, built: Built, status, seconds, error, measure_s, device) -> None:
        space = self.task.space
        trial = Trial(
            key=self.key,
            template=self.task.name,
            module=self.task.template.function.__module__,
            args=self.task.arguments_json(),
            number=built.number,
            knobs=space.values(built.number),
            status=status,
            seconds=seconds,
            error=error,
            build_s=built.build_s,
            measure_s=measure_s,
            text=built.text,
            device=device or self.device,
            target=self.target,
            versions=self.versions,
            when=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        )
        self.log.trials.append(trial)
        append(self.path, trial)
        self.chooser.tell(built.number, seconds if status == "ok" else None)
        self.shown.add(status, seconds)
        self.since_best += 1
        if status == "ok" and seconds < self.best:
            self.best, self.since_best = seconds, 0
        if self.callback is not None:
            self.callback(trial)
        if status in ("wrong", "failed"):
            shown = f"\nits schedule:\n{built.text}" if built.text else ""
            warn(f"tune {self.task.name}: configuration {trial.knobs} {status}: {error}{shown}")

    @property
    def out_of_patience(self) -> bool:
        return self.patience is not None and self.since_best >= self.patience


def _measurer(task, kind: str, cluster, seed, sizes, repeat):
    from .cluster import OnCluster
    from .measuring import Here

    if cluster is None:
        return Here(task, kind, seed, sizes, repeat)
    return OnCluster(cluster, task, kind, seed, sizes, repeat)


def _build_target(resolved, measurer) -> str:
    """The target the compile processes build for: with the measuring GPU's architecture
    spelled out (they never start CUDA to ask it)."""
    if resolved.name == "cpu":
        return "cpu"
    arch = resolved.arch or measurer.arch
    more = f" -min-blocks-per-sm={resolved.min_blocks}" if resolved.min_blocks else ""
    return f"cuda -arch={arch}{more}"


def _earlier(log: Log, key: str, space) -> list:
    """The trials of `key` a run starts from; a failure (a compile process that died, a lost
    worker) is tried again. The key holds the space, so a trial of `key` whose knobs do not
    name its configuration was changed after it was written: skipped, with a warning."""
    kept = []
    for t, line in zip(log.trials, log.lines or [None] * len(log), strict=True):
        if t.key != key or t.status == "failed":
            continue
        try:
            found = space.number_of(t.knobs)
        except TuneError as error:
            skipped(log.path, line, f"its knobs {t.knobs} are not of this task ({error})")
            continue
        if found != t.number:
            why = f"its knobs {t.knobs} are configuration {found}, not its number {t.number}"
            skipped(log.path, line, why)
            continue
        kept.append(t)
    return kept


def _key(task, target: str, device: str, sizes=None) -> str:
    given = sorted((getattr(k, "name", k), v) for k, v in (sizes or {}).items())
    parts = [
        task.algorithm_text(),
        task.name,
        task.template.source_digest,
        task.arguments_json(),
        task.space.identity(),
        target,
        device,
        repr(given),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def _log_path(log, key: str) -> Path | None:
    if log is not None:
        path = Path(log)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
    from ..codegen import disk_cache

    folder = disk_cache.directory()
    if folder is None:
        return None
    path = folder / "tune" / f"{key}.jsonl"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return path


def _versions() -> dict:
    from .. import __version__
    from ..platform_info import probe_package, python_version

    found = {"schedlang": __version__, "python": python_version()}
    found.update({name: probe_package(name).detail for name in ("numpy", "llvmlite", "islpy")})
    return found
