"""Every notebook under notebooks/ runs top to bottom in a fresh kernel (on a machine without a
GPU its GPU cells print a note and skip), so none of them can go stale unnoticed, and shows at
least one picture when it does."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path, monkeypatch):
    # The kernel is a child process: it finds schedlang through PYTHONPATH when the package
    # is not installed (as when the tests run from a clone).
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
    monkeypatch.setenv("MPLBACKEND", "agg")
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()  # raises CellExecutionError naming the cell and its traceback
    errors = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors
    assert not _redrawn(notebook), "a progress bar stored one output per redraw"
    pictures = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert pictures, f"{path.name} shows no picture"  # each notebook shows one at least


def _redrawn(notebook) -> list[str]:
    """The stream outputs that redraw a line (a progress bar written as text), which a
    notebook stores, and the site shows, once per redraw."""
    return [
        output.text[:60]
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream" and "\r" in output.text
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_stored_outputs_hold_no_redrawn_lines(path):
    assert not _redrawn(nbformat.read(path, as_version=4))


def test_every_notebook_is_on_the_site():
    """The site's navigation lists each notebook (mkdocs itself only warns about pages left
    out of it, and the strict build turns that into a failure; this names the notebook)."""
    nav = (ROOT / "mkdocs.yml").read_text()
    assert NOTEBOOKS, "no notebooks found"
    missing = [path.name for path in NOTEBOOKS if f"notebooks/{path.name}" not in nav]
    assert not missing
