"""The hand-written pages of the documentation site are run, so that they cannot go stale.

On each page, the ```python blocks run in order in one namespace, like the cells of a notebook,
each compiled as ``example.py`` (so a message that names the user's line names a line of that
block). A python block followed directly by a ```text block must print exactly that text
(trailing whitespace of each line aside); a python block without one must run without error.
Other blocks (```console, ```sh) are not run.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from ..test_error_catalogue import _BLOCK

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = [
    "index.md",
    "getting-started.md",
    "concepts.md",
    "coming-from-te.md",
    "coming-from-halide.md",
    "tuning.md",
    "targets.md",
    "norms.md",
    *sorted(f"primitives/{p.name}" for p in (DOCS / "primitives").glob("*.md")),
]


def examples(text: str) -> list[tuple[str, str | None]]:
    """``(code, printed)`` for each python block of a page, in order; `printed` is the text
    block right after it, or None when there is none."""
    found: list[tuple[str, str | None]] = []
    end = -1
    for block in _BLOCK.finditer(text):
        kind, body = block.groups()
        follows = found and found[-1][1] is None and not text[end : block.start()].strip()
        if kind == "python":
            found.append((body, None))
        elif follows:
            found[-1] = (found[-1][0], body)
        end = block.end()
    return found


def tidy(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def check_page(text: str) -> int:
    """Run the page's examples; an AssertionError names the first block whose output
    differs. Returns the number of blocks run."""
    namespace: dict = {"__name__": "__main__"}
    blocks = examples(text)
    for number, (code, expected) in enumerate(blocks, start=1):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, "example.py", "exec"), namespace)
        if expected is not None:
            first = code.strip().splitlines()[0]
            assert tidy(out.getvalue()) == tidy(expected), f"python block {number} ({first})"
    return len(blocks)


@pytest.mark.parametrize("page", PAGES)
def test_page_prints_what_it_shows(page):
    assert check_page((DOCS / page).read_text()) > 0


def test_every_primitive_has_a_page():
    names = (
        "split tile fuse reorder unroll vectorize parallel bind compute_at compute_inline "
        "compute_root cache_read cache_write set_scope storage_align double_buffer rfactor"
    ).split()
    index = (DOCS / "primitives" / "index.md").read_text()
    for name in names:
        assert f"primitives/{name}.md" in PAGES
        assert f"({name}.md)" in index, f"primitives/index.md does not link {name}.md"


PAGE = """
```python
print(6 * 7)
```

```text
{printed}
```

```python
x = 1
```

```text
not output: the block above prints nothing, but this text follows a non-printing block
```
"""


def test_a_wrong_output_fails():
    with pytest.raises(AssertionError, match=r"python block 1 \(print\(6 \* 7\)\)"):
        check_page(PAGE.format(printed="41"))
    with pytest.raises(AssertionError, match=r"python block 2 \(x = 1\)"):
        check_page(PAGE.format(printed="42"))
