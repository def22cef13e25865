"""docs/errors.md is run: every example raises the error it documents, printed as documented.

Each entry of the page is a `### title`, a python block (the file ``example.py``), a text block
(the last line of the traceback Python prints) and optionally an HTML comment
``<!-- needs: gpu -->`` (or ``no-gpu``, ``no-libdevice``) for examples whose outcome depends on
the machine. Without a GPU, the GPU's examples run against the recorded driver of an H100 (their
errors come before anything is launched); libdevice is hidden for the examples that need it
missing. Parts of a message that vary between machines (paths searched, the GPU's name and
limits, the driver loader's words, the host CPU's name and triple) are normalised on both
sides before comparing.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

from schedlang.codegen.nvptx import compile as nvptx_compile
from schedlang.codegen.nvptx import libdevice
from schedlang.platform_info import cuda_available

from .cuda.fake_driver import FakeDriver, install

PAGE = Path(__file__).resolve().parents[1] / "docs" / "errors.md"
_BLOCK = re.compile(r"```(python|text)\n(.*?)```", re.DOTALL)
_NEEDS = re.compile(r"<!-- needs: (gpu|no-gpu|no-libdevice) -->")
_VARYING = [
    (re.compile(r"\(searched: [^)]*\)"), "(searched: ...)"),
    (re.compile(r"but .+? (runs|allows|gives a block) at most \d+"), r"but GPU \1 at most N"),
    (re.compile(r"on this machine \(.*\); "), "on this machine (...); "),
    (re.compile(r"this CPU \([^)]*\)"), "this CPU (...)"),
    (re.compile(r"the one it runs on \([^)]*\)"), "the one it runs on (...)"),
]


@dataclass(frozen=True)
class Entry:
    group: str
    title: str
    code: str
    printed: str
    needs: str | None


def read_page(text: str) -> list[Entry]:
    """The entries of the page, in order; a section without both blocks is an error."""
    entries = []
    group = ""
    for section in re.split(r"^(?=##+ )", text, flags=re.MULTILINE):
        heading = section.splitlines()[0] if section else ""
        if heading.startswith("## "):
            group = heading[3:].strip()
        if not heading.startswith("### "):
            continue
        blocks = dict((kind, body) for kind, body in reversed(_BLOCK.findall(section)))
        title = heading[4:].strip()
        assert set(blocks) == {"python", "text"}, f"'{title}' needs a python and a text block"
        needs = _NEEDS.search(section)
        entries.append(
            Entry(group, title, blocks["python"], blocks["text"].strip(), needs and needs[1])
        )
    return entries


def printed(code: str) -> tuple[BaseException, str]:
    """The exception `code` raises when run as ``example.py``, and the line Python prints."""
    try:
        exec(compile(code, "example.py", "exec"), {"__name__": "__main__"})
    except Exception as error:  # noqa: BLE001 - every documented error is caught here
        return error, "".join(traceback.format_exception_only(error)).strip()
    pytest.fail("the example raised nothing")


def normalised(message: str) -> str:
    for pattern, replacement in _VARYING:
        message = pattern.sub(replacement, message)
    return message


ENTRIES = read_page(PAGE.read_text())


def arrange(needs: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this machine one the example's outcome is documented for, or skip."""
    if needs == "gpu" and not cuda_available():
        install(monkeypatch, FakeDriver())
    elif needs == "no-gpu" and cuda_available():
        pytest.skip("the example shows what happens without a GPU")
    elif needs == "no-libdevice":
        monkeypatch.setattr(libdevice, "find", lambda: None)
        monkeypatch.setattr(nvptx_compile, "_memory", {})


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.title for e in ENTRIES])
def test_example_prints_the_documented_message(entry: Entry, monkeypatch):
    arrange(entry.needs, monkeypatch)
    error, shown = printed(entry.code)
    qualified = f"{type(error).__module__}.{type(error).__qualname__}"
    assert qualified.removeprefix("builtins.") == entry.printed.split(":", 1)[0]
    assert normalised(shown) == normalised(entry.printed)
    last = error.__traceback__
    while last.tb_next is not None:
        last = last.tb_next
    assert last.tb_frame.f_code.co_filename == "example.py"  # the user's line, not schedlang's


def test_the_catalogue_covers_forty_distinct_mistakes():
    assert len(ENTRIES) >= 40
    assert len({e.title for e in ENTRIES}) == len(ENTRIES)
    assert len({e.printed for e in ENTRIES}) == len(ENTRIES)
