"""Ctrl-C stops a build. islpy turns an exception raised in a Python callback (Ctrl-C's
KeyboardInterrupt among them) into a messageless failure of the isl call; schedlang's callbacks
keep it and raise it again once isl returns (`poly.isl_calls`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import islpy as isl
import pytest

import schedlang as sl
from schedlang.loopir import from_isl
from schedlang.poly.isl_calls import Callbacks

ROOT = Path(__file__).resolve().parents[2]


def test_an_interrupt_in_a_callback_comes_out_of_the_isl_call():
    seen = []

    def visit(point):
        seen.append(point)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        with Callbacks() as calls:
            isl.Set("{ [i] : 0 <= i < 1000 }").foreach_point(calls.wrap(visit))
    assert len(seen) == 1  # the callback ran once: the rest of the walk was skipped


def test_an_interrupt_while_isl_generates_the_loops_stops_lower(monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(from_isl, "_leaf", interrupted)
    a = sl.placeholder((9,), name="A")
    b = sl.compute((9,), lambda i: a[i] + 1.0, name="B")
    with pytest.raises(KeyboardInterrupt):
        sl.lower(sl.create_schedule(b), [a, b])


CHILD = textwrap.dedent(
    """
    import sys
    import schedlang as sl

    def halved(t):
        return lambda i, j: t[i, j] * 0.5 + 1.0

    a = sl.placeholder((33, 33), name="A")
    t = a
    for k in range(40):
        t = sl.compute((33, 33), halved(t), name=f"T{k}")
    s = sl.create_schedule(t)
    for stage in s.stages[1:]:
        xo, yo, xi, yi = stage.tile(stage.op.axis[0], stage.op.axis[1], 4, 4)
        stage.fuse(xi, yi)
    print("building", flush=True)
    while True:
        sl.lower(s, [a, t])
    """
)


def test_sigint_during_a_long_build_raises_keyboard_interrupt_promptly():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout.readline() == "building\n"
        time.sleep(1.5)
        child.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert time.perf_counter() - sent < 10
    last = err.strip().splitlines()[-1]
    assert last == "KeyboardInterrupt", err[-2000:]
