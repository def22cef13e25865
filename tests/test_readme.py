"""The README: its example runs as written (it is the first thing a user copies), and its
commands name what exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "def main(A: float32[n, n], B: float32[n, n], C: float32[n, n]):" in out
    assert "# parallel" in out and "# vectorized" in out and out.rstrip().endswith("ms")


def test_readme_commands_install_and_run_what_they_say():
    """The copy-paste commands: the demo, the whole suite, and a quick subset whose paths
    exist (a renamed folder would otherwise leave it running nothing)."""
    commands = re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
    assert "pip install -e . && schedlang demo" in commands
    assert 'pip install -e ".[test]" && pytest -n auto' in commands
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == "pytest -n auto"  # CI runs exactly the README's test command
    (quick,) = [c for c in commands if "&& pytest tests/" in c]
    paths = quick.split("&& pytest ")[1].split()
    assert len(paths) >= 3 and all((ROOT / path).exists() for path in paths)
