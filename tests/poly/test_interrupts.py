"""Ctrl-C stops a build. islpy turns an exception raised in a Python callback (Ctrl-C's
KeyboardInterrupt among them) into a messageless failure of the isl call; schedlang's callbacks
keep it and raise it again once isl returns (`poly.isl_calls`). A long isl call without
callbacks is stopped by a native handler that aborts isl's context (`runtime.interrupt`)."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import islpy as isl
import pytest

import schedlang as sl
from schedlang.loopir import from_isl
from schedlang.poly import isl_calls
from schedlang.poly.isl_calls import Callbacks
from schedlang.runtime import interrupt

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


def _child(code: str) -> subprocess.Popen:
    """A Python process running `code` with this checkout's schedlang, its output piped, and
    Ctrl-C Python's own there whatever this process does with it (a test runner's worker may
    ignore SIGINT, and an ignored signal stays ignored in its children)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_sigint_during_a_long_build_raises_keyboard_interrupt_promptly():
    child = _child(CHILD)
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


# one isl call of many seconds, with no Python callback in it: the complement of a set of
# nine periodic dimensions (about 7 s on a 2-core machine, and more for each dimension added)
LONG_ISL_CALL = textwrap.dedent(
    """
    import islpy as isl
    from schedlang.runtime.interrupt import interruptible

    dims = ",".join(f"i{k}" for k in range(10))
    rows = " and ".join(f"0 <= i{k} <= 100 and i{k} mod {k + 3} != 1" for k in range(10))
    hard = isl.Set(f"[N] -> {{ [{dims}] : {rows} and i0 + i1 <= N }}")
    print("computing", flush=True)
    try:
        with interruptible():
            hard.complement()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    print(isl.Set("{ [i] : 0 <= i < 4 }").lexmax())  # isl works again afterwards
    while True:  # and Ctrl-C is Python's own again
        pass
    """
)


def test_sigint_stops_one_long_isl_call():
    child = _child(LONG_ISL_CALL)
    try:
        assert child.stdout.readline() == "computing\n"
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        sent = time.perf_counter()
        assert child.stdout.readline() == "interrupted\n"
        waited = time.perf_counter() - sent
        assert child.stdout.readline() == "{ [i = 3] }\n"
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert waited < 3, waited
    assert err.strip().splitlines()[-1] == "KeyboardInterrupt", err[-2000:]


def test_the_context_address_is_the_one_isl_computes_with():
    library = ctypes.CDLL(isl._isl.__file__)
    direct = isl_calls.context_address(isl.DEFAULT_CONTEXT, library)
    through_a_set = isl_calls.context_address(isl.Set("{ [i] }").get_ctx(), library)
    assert direct is not None and direct == through_a_set


def test_a_build_leaves_sigint_to_python():
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the runner's
    try:
        a = sl.placeholder((9,), name="A")
        b = sl.compute((9,), lambda i: a[i] + 1.0, name="B")
        sl.lower(sl.create_schedule(b), [a, b])
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)  # Python's handler, not a native one left behind
    finally:
        signal.signal(signal.SIGINT, outer)


def test_outside_the_main_thread_nothing_is_installed():
    seen = []

    def build():
        with interrupt.interruptible():
            seen.append(isl_calls.deferral)

    worker = threading.Thread(target=build)
    worker.start()
    worker.join()
    assert seen == [None]
