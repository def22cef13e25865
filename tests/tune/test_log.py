"""The tuning log read back: a line that is not a trial (binary bytes, JSON cut short, a time
that is not a positive number, a field of the wrong type) is skipped with a warning that names
the file and line, never fatal and never the best."""

from __future__ import annotations

import json
import re

import pytest

import schedlang as sl
from schedlang.tune.log import Trial, load

GOOD = dict(
    key="k" * 32,
    template="matmul",
    args="[[], {}]",
    number=3,
    knobs={"tile": 4},
    status="ok",
    seconds=2.5e-3,
    error="",
    build_s=0.3,
    measure_s=0.1,
    text="s = ...",
    device="cpu",
    target="cpu",
)


def _line(**changes) -> bytes:
    return json.dumps({**GOOD, **changes}).encode()


DAMAGED = {
    "binary": (b"\x80\xff\x00garbage\xfe", "it is not text"),
    "cut": (_line()[:40], "it is not JSON"),
    "list": (b"[1, 2]", "it holds a JSON list, not a trial"),
    "negative": (_line(number=4, seconds=-1.0), r"its seconds is -1.0, not a time"),
    "text-time": (_line(number=5, seconds="fast"), r"its seconds is 'fast', not a number"),
    "nan": (_line(number=6).replace(b"0.0025", b"NaN"), r"its seconds is nan, not a time"),
    "zero": (_line(number=7, seconds=0), r"ran correctly in 0 seconds"),
    "ok-untimed": (_line(number=8, seconds=None), r"ran correctly in None seconds"),
    "status": (_line(number=9, status="great"), r"its status is 'great'"),
    "number": (_line(number="10"), r"its number is '10', not a number"),
    "bool": (_line(number=True), r"its number is True"),
    "knobs": (_line(number=11, knobs=[4]), r"its knobs is \[4\], not a JSON object"),
    "fields": (_line(number=12, speed=1), r"unknown \['speed'\], missing \[\]"),
}


def test_each_damaged_line_is_skipped_with_a_warning_naming_file_and_line(tmp_path):
    path = tmp_path / "log.jsonl"
    lines = [_line()] + [raw for raw, _ in DAMAGED.values()] + [b"", _line(number=1, seconds=9.0)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.warns(sl.SchedlangWarning) as said:
        log = load(path)
    assert [t.number for t in log] == [3, 1]
    assert log.lines == [1, len(lines)]
    assert log.best().number == 3 and log.best().seconds == 2.5e-3
    messages = [str(w.message) for w in said]
    assert len(messages) == len(DAMAGED)
    for line, (name, (_, why)) in enumerate(DAMAGED.items(), 2):
        message = messages[line - 2]
        assert message.startswith(f"line {line} of the tuning log {path} is skipped: "), name
        assert re.search(why, message), (name, message)
        assert message.endswith("tuning goes on without it (it can be deleted)")


def test_a_log_of_good_lines_reads_without_warnings(tmp_path, recwarn):
    path = tmp_path / "log.jsonl"
    trial = Trial(**{**GOOD, "status": "illegal", "seconds": None})
    path.write_text(_line().decode() + "\n" + trial.json() + "\n")
    assert load(path).trials == [Trial(**GOOD), trial]
    assert not recwarn.list
