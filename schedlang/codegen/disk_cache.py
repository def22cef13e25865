"""Compiled code kept on disk: read only when verified, written when possible, never a reason
for a build to fail.

The folder is schedlang's in the user's cache folder (``~/.cache/schedlang`` on Linux, as
`platformdirs` says for each system), or ``SCHEDLANG_CACHE_DIR``; ``SCHEDLANG_CACHE_DIR=off``
turns the disk cache off. Deleting the folder at any time is safe.

The disk is the user's: a file can be cut short by a full disk or a killed process, changed by
a failing drive, or left by an older schedlang; the folder can be read-only or not a folder at
all; a backup restored or a folder synced can put one entry under another's name. Machine code
loaded from such a file would fail to link or, worse, run (or run as another kernel), so every
entry is sealed (`sealed`: magic, format version, length, SHA-256, and the file name it was
written under, which is the hash of its key) and checked before it is used. An entry that cannot
be read or fails the check is a miss: the code is compiled again and the entry replaced. An
entry that cannot be written is skipped, with one warning per process that says why and how to
fix it. The CPU object cache (`cache`) and the cache of whole builds (`build_cache`) go through
here; a GPU kernel's PTX is compiled by the driver, which keeps its own cache.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import platformdirs

from ..errors import warn
from .sealed import Unsealed, seal, unseal

VARIABLE = "SCHEDLANG_CACHE_DIR"
MAGIC = b"SLCACHE\0"
VERSION = 2  # 2: the entry's name is sealed with it

_warned = False  # whether this process has said that the cache cannot be written


OFF = ("off", "0", "no", "none", "false", "")


def directory() -> Path | None:
    """The cache's folder, or None when the disk cache is off."""
    folder = os.environ.get(VARIABLE)
    if folder is None:
        return platformdirs.user_cache_path("schedlang")
    return None if folder.strip().lower() in OFF else Path(folder)


def pack(payload: bytes, name: str) -> bytes:
    """`payload` sealed for the file `name`, as `unpack` checks it."""
    return seal(MAGIC, VERSION, name, payload)


def unpack(entry: bytes, name: str) -> bytes | None:
    """The payload of `entry` read from the file `name`, or None when `entry` is not exactly
    what `pack` made for that name (cut short, extended, altered, empty, from another format,
    or another key's entry)."""
    try:
        return unseal(MAGIC, VERSION, name, entry)
    except Unsealed:
        return None


def read(path: Path) -> bytes | None:
    """The verified payload stored at `path`, or None for a miss (no file, unreadable, bad,
    or written under another name: each file's name must be the hash of its whole key)."""
    try:
        entry = path.read_bytes()
    except OSError:
        return None
    return unpack(entry, path.name)


def write(path: Path, payload: bytes) -> bool:
    """Store `payload` at `path` atomically (a reader never sees half an entry); False, with a
    warning the first time in this process, when the disk refuses."""
    try:
        _write_atomically(path, pack(payload, path.name))
    except OSError as error:
        _warn_unwritable(path.parent, error)
        return False
    return True


def load_or_make(path: Path | None, make: Callable[[], bytes]) -> bytes:
    """The payload cached at `path`, or `make()` stored there; `path` None means no cache."""
    if path is None:
        return make()
    payload = read(path)
    if payload is None:
        payload = make()
        write(path, payload)
    return payload


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _warn_unwritable(folder: Path, error: OSError) -> None:
    global _warned
    if _warned:
        return
    _warned = True
    reason = error.strerror or str(error)
    warn(
        f"the compile cache cannot write to '{folder}' ({type(error).__name__}: {reason}); "
        f"schedlang goes on compiling without storing code on disk. Point {VARIABLE} at a "
        f"writable directory, or set {VARIABLE}=off to turn the disk cache off"
    )
