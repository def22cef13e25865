"""Locations in messages name IPython cells as IPython does (``Cell In[2], line 3``), not the
temporary files Jupyter compiles cells from; outside IPython they stay ``file.py:LINE``."""

from __future__ import annotations

import pytest

import schedlang as sl

CELL = """\
import schedlang as sl
n = sl.var("n")
A = sl.placeholder((n,), name="A")
B = sl.compute((n,), lambda i: A[i] * 2.0, name="B")
s = sl.create_schedule(B.op)
s[B].split(B.op.axis[0], factor=0)
"""


@pytest.fixture
def shell():
    interactive = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactive.InteractiveShell.instance()
    yield shell
    interactive.InteractiveShell.clear_instance()


def test_a_schedule_error_in_a_cell_names_the_cell_and_line(shell):
    shell.run_cell("x = 1", store_history=True)  # the erring cell is the second one
    result = shell.run_cell(CELL, store_history=True)
    error = result.error_in_exec
    assert isinstance(error, sl.ScheduleError)
    assert "at Cell In[2], line 6" in str(error)


def test_outside_ipython_the_file_and_line_are_named():
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
    s = sl.create_schedule(b.op)
    with pytest.raises(sl.ScheduleError, match=r"at test_ipython_locations\.py:\d+"):
        s[b].split(b.op.axis[0], factor=0)
