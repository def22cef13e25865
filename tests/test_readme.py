"""The README's example runs as written (it is the first thing a user copies)."""

from __future__ import annotations

import re
from pathlib import Path


def test_readme_example_runs(capsys):
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "def main(A: float32[n, n], B: float32[n, n], C: float32[n, n]):" in out
    assert "# parallel" in out and "# vectorized" in out and out.rstrip().endswith("ms")
