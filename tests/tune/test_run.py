"""`sl.tune.run` end to end on the CPU: compile processes, isl's refusals recorded, every
kernel checked against the reference, the JSON-lines log, the best schedule given back, and
the log answering a second run instead of measuring again."""

from __future__ import annotations

import json

import numpy as np
import pytest

import schedlang as sl
from schedlang.tune import runner as runner_module
from tests.tune import templates


def _run(task, tmp_path, **options):
    options.setdefault("search", "grid")
    options.setdefault("workers", 2)
    options.setdefault("repeat", 2)
    options.setdefault("progress", False)
    return sl.tune.run(task, target="cpu", log=tmp_path / "log.jsonl", **options)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tune")
    task = templates.matmul(13, 21, 19)
    return task, _run(task, folder), folder / "log.jsonl"


def test_every_configuration_gets_a_trial(tuned):
    task, log, _ = tuned
    assert len(task.space) == 8
    assert sorted(t.number for t in log) == list(range(8))
    counts = log.counts()
    assert counts == {"ok": 4, "illegal": 4, "wrong": 0, "failed": 0}


def test_illegal_points_are_refused_before_any_code_is_made(tuned):
    _, log, _ = tuned
    for trial in log:
        if trial.knobs["inner"] == ["i", "j", "k"]:  # the reduction loop vectorized
            assert trial.status == "illegal" and trial.seconds is None
            assert "vectoriz" in trial.error
        else:
            assert trial.ok and trial.seconds > 0


def test_the_log_holds_every_trial_as_a_json_line(tuned):
    _, log, path = tuned
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == len(log)
    first = next(line for line in lines if line["status"] == "ok")
    for field in ("knobs", "text", "status", "seconds", "device", "versions", "key", "args"):
        assert field in first
    assert first["versions"]["schedlang"] == sl.__version__
    assert "CPU" in first["device"]
    assert first["text"].startswith("s = sl.create_schedule([C])")


def test_the_best_comes_back_as_a_schedule_that_computes_the_product(tuned):
    task, log, path = tuned
    best = sl.tune.load(path).best()
    assert best == log.best()
    assert best.seconds == min(t.seconds for t in log if t.ok)
    s, args = best.schedule()
    kernel = sl.build(s, args)
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (13, 19)).astype(np.float32)
    b = rng.uniform(-1, 1, (19, 21)).astype(np.float32)
    c = np.full((13, 21), np.nan, np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_the_logged_text_replays_the_schedule(tuned):
    task, log, _ = tuned
    best = log.best()
    s, (a, b, c) = best.schedule()
    replay = {"sl": sl, "A": a, "B": b, "C": c}
    exec(best.text, replay)
    assert str(sl.lower(replay["s"], [a, b, c])) == str(sl.lower(s, [a, b, c]))


def test_asking_again_answers_from_the_log(tuned, monkeypatch):
    task, log, path = tuned

    def no_compiles(*args, **kwargs):
        raise AssertionError("a cached run started compile processes")

    monkeypatch.setattr("schedlang.tune.pool.Compilers", no_compiles)
    monkeypatch.setattr("schedlang.tune.measuring.bench_data", no_compiles)  # nor a reference
    again = _run(templates.matmul(13, 21, 19), path.parent)
    assert [t.number for t in again] == [t.number for t in log]
    assert again.best() == log.best()


def test_damaged_lines_of_the_task_being_run_are_skipped_never_the_best(tuned, tmp_path):
    """Lines of this very task's key, damaged: a negative time (which would win), a time that
    is not a number, knobs that are not its configuration's, binary bytes. The run warns of
    each, by file and line, answers from the good lines and measures nothing again."""
    task, log, path = tuned
    good = [json.loads(line) for line in path.read_text().splitlines()]
    ok = next(t for t in good if t["status"] == "ok")
    other = next(t for t in good if t["number"] != ok["number"])
    damaged = [
        {**ok, "seconds": -1.0},
        {**ok, "seconds": "0.000001"},
        {**ok, "knobs": other["knobs"], "seconds": 1e-9},
        {**ok, "knobs": {"no_such_knob": 1}, "seconds": 1e-9},
    ]
    copy = tmp_path / "log.jsonl"
    lines = [json.dumps(t).encode() for t in good + damaged] + [b"\x00\xff\x13binary"]
    copy.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.warns(sl.SchedlangWarning) as said:
        again = _run(templates.matmul(13, 21, 19), tmp_path)
    assert again.best() == log.best()
    assert sorted(t.number for t in again) == sorted(t.number for t in log)
    messages = [str(w.message) for w in said]
    for line in range(len(good) + 1, len(lines) + 1):
        assert any(f"line {line} of the tuning log {copy} is skipped" in m for m in messages)
    assert f"line {len(good) + 3} " in "".join(m for m in messages if "not its number" in m)


def test_a_run_asking_for_more_goes_on_from_the_log(tmp_path):
    first = _run(templates.matmul(9, 17, 11), tmp_path, trials=3, search="random")
    assert len(first) == 3
    more = _run(templates.matmul(9, 17, 11), tmp_path, trials=6, search="random")
    assert len(more) == 6
    assert [t.number for t in more][:3] == [t.number for t in first]
    assert len({t.number for t in more}) == 6
    other = _run(templates.matmul(9, 17, 13), tmp_path, trials=2, search="random")
    assert len(other) == 2  # other sizes: another algorithm, another key
    assert other.trials[0].key != more.trials[0].key


def test_wrong_results_and_failures_are_reported_loudly_and_never_win(tmp_path):
    with pytest.warns(sl.SchedlangWarning) as said:
        log = _run(templates.faulty(11), tmp_path)
    by_fault = {}
    for trial in log:
        by_fault.setdefault(trial.knobs["fault"], set()).add(trial.status)
    assert by_fault == {"none": {"ok"}, "wrong": {"wrong"}, "raise": {"failed"}, "die": {"failed"}}
    messages = "\n".join(str(w.message) for w in said)
    assert "'fault': 'wrong'" in messages and "output C is off by" in messages
    assert "ValueError: a bug in the template" in messages
    assert "the compile process died (exit code 3)" in messages
    assert log.best().knobs["fault"] == "none"


def test_a_timeout_of_zero_tries_nothing(tmp_path):
    log = _run(templates.matmul(5, 7, 9), tmp_path, timeout=0)
    assert len(log) == 0


def test_the_progress_bar_counts_the_statuses(tmp_path, capsys):
    _run(templates.matmul(5, 7, 9), tmp_path, trials=4, progress=True)
    shown = capsys.readouterr().err
    assert "4/4" in shown and "illegal=" in shown and "best=" in shown


def test_without_a_log_nothing_is_written(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    log = sl.tune.run(
        templates.matmul(5, 7, 9), target="cpu", trials=2, search="grid", workers=1,
        progress=False, repeat=1,
    )  # fmt: skip
    assert len(log) == 2 and log.path is None
    assert list(tmp_path.iterdir()) == []


def test_plots_of_the_log(tuned):
    _, log, _ = tuned
    figure = log.plot()
    assert figure.axes[0].get_xlabel() == "trial"
    heat = log.heatmap("tile_j", "tile_i")
    assert heat.axes[0].get_title() == "best time (ms) by tile_i and tile_j"
    with pytest.raises(sl.tune.TuneError, match="heatmap: no knob 'tile_k'"):
        log.heatmap("tile_k", "tile_i")
    assert "trials: 4 ok, 4 illegal" in log._repr_html_()


def test_a_template_that_returns_no_schedule_is_refused():
    @sl.tune.template
    def nothing(cfg):
        cfg.choice("x", [1, 2])
        return None

    with pytest.raises(sl.tune.TuneError, match=r"returns \(schedule, args\)"):
        nothing().space  # noqa: B018


def test_a_template_without_knobs_is_refused():
    @sl.tune.template
    def fixed(cfg):
        a, b, c = templates.matmul_algorithm(4, 4, 4)
        return sl.create_schedule(c), [a, b, c]

    with pytest.raises(sl.tune.TuneError, match="defines no knob: nothing to tune"):
        sl.tune.run(fixed(), target="cpu")


def test_the_cache_key_names_the_device_and_target(tuned):
    task, log, _ = tuned
    key = runner_module._key(task, "cpu", log.trials[0].device)
    assert key == log.trials[0].key
    assert runner_module._key(task, "cuda -arch=sm_90", "GPU") != key


def test_a_template_defined_in_a_function_travels_by_value_and_keeps_its_file(tmp_path):
    @sl.tune.template
    def local(cfg, n):
        a = sl.placeholder((n,), name="A")
        b = sl.compute((n,), lambda i: a[i] + 1.0, name="B")
        s = sl.create_schedule(b)
        outer, inner = cfg.split("tile", s[b], s[b].op.axis[0], candidates=[[-1, 4], [-1, 6]])
        if cfg.flag("mistake"):
            s[b].unroll(s[b].op.axis[0])  # already split: refused, naming this line
        return s, [a, b]

    log = _run(local(37), tmp_path)
    assert log.counts() == {"ok": 2, "illegal": 2, "wrong": 0, "failed": 0}
    for trial in log:
        if trial.status == "illegal":
            assert "was already split" in trial.error and "test_run.py:" in trial.error


def test_closing_the_compile_processes_leaves_none_running():
    task = templates.matmul(9, 9, 9)
    pool = sl.tune.Compilers(2)
    job = pool.job(task, "cpu")
    futures = [pool.submit(job, n) for n in range(8)]
    futures[0].result()
    pool.close()
    assert all(p.poll() is not None for p in pool._processes)
    assert all(f.done() for f in futures)


def test_a_compile_process_that_prints_to_its_standard_output_still_answers(tmp_path):
    @sl.tune.template
    def chatty(cfg, n):
        import os as inner_os

        inner_os.write(1, b"a line on standard output\n")
        print("and one from print")
        a = sl.placeholder((n,), name="A")
        b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
        s = sl.create_schedule(b)
        cfg.split("tile", s[b], s[b].op.axis[0], candidates=[[-1, 2], [-1, 4]])
        return s, [a, b]

    log = _run(chatty(10), tmp_path)
    assert log.counts()["ok"] == 2


def test_a_log_line_cut_short_is_skipped_and_the_next_starts_afresh(tmp_path):
    first = _run(templates.matmul(5, 7, 9), tmp_path, trials=2)
    path = tmp_path / "log.jsonl"
    path.write_text(path.read_text() + '{"key": "cut sho')  # a run killed mid-line
    with pytest.warns(sl.SchedlangWarning, match="line 3 of the tuning log .* is not JSON"):
        more = _run(templates.matmul(5, 7, 9), tmp_path, trials=3)
    with pytest.warns(sl.SchedlangWarning, match="line 3 of the tuning log"):
        assert len(sl.tune.load(path)) == 3
    assert [t.number for t in more][:2] == [t.number for t in first]


def test_the_log_keys_the_sizes_and_every_choice(tuned):
    task, log, _ = tuned
    device = log.trials[0].device
    key = runner_module._key(task, "cpu", device)
    assert runner_module._key(task, "cpu", device, {"n": 4}) != key
    other = templates.matmul(13, 21, 19)
    other.space.knobs["tile_i"] = type(other.space.knobs["tile_i"])(
        "tile_i", ((-1, 4), (-1, 16)), 13, "candidate"
    )
    assert runner_module._key(other, "cpu", device) != key


def test_knob_choices_must_be_json_values():
    import numpy as np

    space = sl.tune.Space()
    cfg = sl.tune.Config(space)
    cfg.define_knob("n", np.arange(3))  # numpy's integers are written as Python's
    assert space.knobs["n"].choices == (0, 1, 2)
    with pytest.raises(sl.tune.TuneError, match="its choices must be numbers, strings"):
        cfg.define_knob("f", [len])


def test_patience_stops_a_run_that_no_longer_improves(tmp_path):
    """One compile process, one configuration at a time: the run stops right after two trials
    in a row that beat no earlier time (its first trial is illegal: one already)."""
    log = _run(templates.matmul(15, 17, 9), tmp_path, patience=2, workers=1,
               search="random", trials=8)  # fmt: skip
    assert len(log) < 8, "the run never stopped"
    times = [t.seconds if t.ok else float("inf") for t in log]
    best_before = [min(times[:k], default=float("inf")) for k in range(len(times))]
    improved = [time < before for time, before in zip(times, best_before)]
    assert not any(improved[-2:])  # the two last trials found nothing better
    for k in range(2, len(log) - 1):  # and it did not stop at any earlier such pair
        assert any(improved[k - 1 : k + 1])


def test_a_build_that_takes_too_long_is_stopped_and_fails(tmp_path):
    with pytest.warns(sl.SchedlangWarning, match="took longer than 5 s"):
        log = _run(templates.slow(7), tmp_path, build_timeout=5, workers=1)
    assert {t.knobs["slow"]: t.status for t in log} == {False: "ok", True: "failed"}


def test_the_search_hears_every_measured_batch_before_it_proposes_the_next(monkeypatch, tmp_path):
    """On the CPU the compiles pause while a batch is measured: the next batch is asked for
    only once the search has been told how the last one did."""
    events = []
    real = runner_module.make_search

    def watched(*args):
        search = real(*args)
        ask, tell = search.ask, search.tell
        search.ask = lambda: events.append("ask") or ask()
        search.tell = lambda number, seconds: events.append("tell") or tell(number, seconds)
        return search

    monkeypatch.setattr(runner_module, "make_search", watched)
    _run(templates.matmul(13, 21, 19), tmp_path, workers=1, search="random", trials=6)
    asked = [k for k, event in enumerate(events) if event == "ask"]
    for k in asked[1:]:
        assert events[:k].count("tell") == events[:k].count("ask"), events


def test_full_collections_leave_the_objects_of_before_the_run_alone_while_it_runs(tmp_path):
    """What was alive when the loop started is frozen out of the collector (its full passes
    stalled a local cluster's scheduler), and given back to it after the run."""
    import gc

    frozen = []
    _run(
        templates.matmul(7, 9, 5), tmp_path, callback=lambda _: frozen.append(gc.get_freeze_count())
    )
    assert min(frozen) > 1000
    assert gc.get_freeze_count() == 0
