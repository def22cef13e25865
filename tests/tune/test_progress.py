"""The tuner's progress bar: a line redrawn on stderr in a terminal, one display output
updated in place in a Jupyter kernel (a notebook stores one line, not one per redraw)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlang.tune.progress import DisplayLine, Progress

ROOT = Path(__file__).resolve().parents[2]


class Handle:
    def __init__(self) -> None:
        self.shown: list[str] = []

    def update(self, text: str) -> None:
        self.shown.append(text)


def test_a_display_line_shows_the_latest_line_only():
    handle = Handle()
    line = DisplayLine(handle, str)
    line.write("\rtuning:  10%|#")
    line.write("\rtuning:  20%|##\rtuning:  30%|###")
    line.write("\n")  # tqdm's last write when it closes: nothing new to show
    line.write("\r   \r")
    assert handle.shown == ["tuning:  10%|#", "tuning:  30%|###"]


def test_outside_a_kernel_the_bar_is_drawn_on_stderr(capsys):
    progress = Progress(3, True, "tuning t")
    for seconds in (0.002, None, 0.001):
        progress.add("ok" if seconds else "illegal", seconds)
    progress.close()
    err = capsys.readouterr().err
    assert "tuning t: 100%" in err and "3/3" in err and "best=1 ms" in err


def test_in_a_jupyter_kernel_the_bar_is_one_output():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    code = f"""import sys
sys.path.insert(0, {str(ROOT)!r})
from schedlang.tune.progress import Progress
progress = Progress(40, True, "tuning t")
for k in range(40):
    progress.add("ok", 0.001 * (40 - k))
progress.close()
print("done")"""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    outputs = notebook.cells[0].outputs
    assert [o.output_type for o in outputs] == ["display_data", "stream"], outputs
    final = outputs[0].data["text/plain"]
    assert final.startswith("tuning t: 100%|") and "40/40" in final and "best=1 ms" in final
    assert "█" in final and outputs[1].text == "done\n"
