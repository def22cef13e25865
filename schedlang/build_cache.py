"""Whole builds kept on disk: a process that builds a schedule another process built loads the
kernel, with no lowering and no LLVM.

Lowering (isl) and code generation (LLVM) take a few hundred milliseconds for a GEMM, which a
program pays at each start and a tuner at each candidate it meets again. The key is what the
kernel is made from: the schedule and algorithm as canonical text (`schedule.canonical`), the
arguments' order, the kernel's name, the resolved target (the architecture, the math library,
the host CPU), and the versions of everything that makes code from them (schedlang's own
source, LLVM, isl). An entry is what ``kernel.export`` writes (`runtime.saved`), with the
warnings the build gave, said again when it is loaded. Entries go through `disk_cache`
(verified on read, written atomically, a folder that refuses writes only costs the compile).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import pickle
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .codegen import disk_cache
from .errors import recorded_warnings, warn

if TYPE_CHECKING:
    from .ir.tensor import Tensor
    from .schedule.schedule import Schedule

FORMAT = 1


def cached(
    s: Schedule,
    args: Sequence[Tensor],
    name: str,
    target: Callable[[], str],
    make: Callable[[], object],
) -> object:
    """The kernel ``make()`` builds for `s`, `args` and `name` on ``target()`` (the resolved
    target, with everything else its code depends on): loaded from disk when an earlier build
    stored it, else built and stored. ``target()`` is asked only where an entry of the same
    schedule exists, or after ``make()``: a GPU's architecture needs CUDA started, which a
    first build does beside the lowering (`runtime.cuda.start`)."""
    folder = _folder(s, args, name)
    if folder is None:
        return make()
    if folder.is_dir():
        payload = disk_cache.read(_entry(folder, target()))
        kernel = None if payload is None else _revive(payload, folder)
        if kernel is not None:
            return kernel
    with recorded_warnings() as said:
        kernel = make()
    from .runtime.saved import contents

    entry = {"format": FORMAT, "kernel": contents(kernel), "warnings": said}
    disk_cache.write(_entry(folder, target()), pickle.dumps(entry, pickle.HIGHEST_PROTOCOL))
    return kernel


def _folder(s: Schedule, args: Sequence[Tensor], name: str) -> Path | None:
    """The folder of the entries of this build, one per target; None when it is uncached."""
    folder = disk_cache.directory()
    if folder is None:
        return None
    from .schedule.canonical import Uncacheable, canonical_text

    try:
        text = canonical_text(s, args)
    except Uncacheable:
        return None
    from .ir.intrinsics import rules_fingerprint

    rules = rules_fingerprint()  # the lowering rules registered in this process
    digest = hashlib.sha256(f"{FORMAT}\n{_toolchain()}\n{name}\n{rules}\n".encode())
    digest.update(text.encode())
    return folder / "builds" / digest.hexdigest()


def _entry(folder: Path, target: str) -> Path:
    """The file of the build in `folder` for `target`: named by a hash of both, since an entry
    is checked against its file's name (`disk_cache`), so that one put in another schedule's
    folder is a miss."""
    key = f"{folder.name}\n{target}"
    return folder / f"{hashlib.sha256(key.encode()).hexdigest()}.pkl"


def _revive(payload: bytes, path: Path) -> object | None:
    """The kernel of a verified entry, or None for an entry of another format (a miss)."""
    from .runtime.saved import FORMAT as SAVED
    from .runtime.saved import revive

    try:
        entry = pickle.loads(payload)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    if entry["kernel"].get("format") != SAVED:
        return None
    kernel = revive(entry["kernel"], f"cached {path.name}")
    for message in entry["warnings"]:
        warn(message)
    return kernel


@functools.cache
def _toolchain() -> str:
    """What code is made with: schedlang's source, the installed llvmlite (with its LLVM) and
    islpy (with its isl), and Python's version; each read off its files' names, sizes and
    times of change, which any edit or install changes (reading them, or importing islpy for
    its version, would cost more than the rest of a cached build)."""
    digest = hashlib.sha256(_files(os.path.dirname(__file__), recursive=True).encode())
    for name in ("llvmlite", "llvmlite.binding", "islpy"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            digest.update(_files(os.path.dirname(spec.origin), recursive=False).encode())
    return f"{digest.hexdigest()} {sys.version_info[:2]}"


def _files(folder: str, recursive: bool) -> str:
    """Each file under `folder` (Python sources only where `recursive`) by path, size and
    time of change; `os.scandir`, since pathlib's path arithmetic alone costs milliseconds."""
    found = []
    pending = [""]
    while pending:
        relative = pending.pop()
        with os.scandir(os.path.join(folder, relative)) as entries:
            for entry in entries:
                path = os.path.join(relative, entry.name)
                if entry.is_dir():
                    if recursive and entry.name != "__pycache__":
                        pending.append(path)
                elif entry.is_file() and (not recursive or entry.name.endswith(".py")):
                    status = entry.stat()
                    found.append(f"{path}:{status.st_size}:{status.st_mtime_ns}")
    return " ".join(sorted(found))
