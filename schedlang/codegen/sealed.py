"""Bytes sealed by a header that tells, before anything reads them, whether they are still what
was written: the disk cache's entries (`disk_cache`) and saved kernels (``runtime.saved``).

Both hold machine code that is linked and run, or a pickle that is unpickled: a byte changed by
a failing drive, a file cut short by a full disk, or a file of another kind or format would
otherwise run as code (an illegal instruction, a crash, a hang) or fail deep inside the
unpickler. The header is a mark naming the kind of file, the format's version, the length and
the SHA-256 of the body; the body starts with the name the bytes were written under (a cache
entry's file name is the hash of its key), so an entry copied under another name fails too.
`unseal` says which of these went wrong, for the message of a file the user gave.
"""

from __future__ import annotations

import hashlib
import struct

_HEADER = struct.Struct("<8sIQ32s")  # mark, format version, body length, SHA-256 of the body
_NAME = struct.Struct("<H")  # the length of the name that starts the body

FOREIGN = "foreign"  # does not start with the mark: another kind of file
VERSION = "version"  # another format version
TRUNCATED = "truncated"  # shorter than its header says
DAMAGED = "damaged"  # longer than its header says, or the checksum fails
MISPLACED = "misplaced"  # sealed under another name


class Unsealed(Exception):
    """Why bytes are not what `seal` made; `reason` is one of the constants above, `found`
    the version or name found where `reason` is VERSION or MISPLACED."""

    def __init__(self, reason: str, found: object = None) -> None:
        super().__init__(reason)
        self.reason, self.found = reason, found


def seal(mark: bytes, version: int, name: str, payload: bytes) -> bytes:
    """`payload` with the header `unseal` checks, written under `name`."""
    encoded = name.encode()
    body = _NAME.pack(len(encoded)) + encoded + payload
    digest = hashlib.sha256(body).digest()
    return _HEADER.pack(mark, version, len(body), digest) + body


def unseal(mark: bytes, version: int, name: str, data: bytes) -> bytes:
    """The payload `seal` sealed in `data` under `name`; `Unsealed` where `data` is anything
    else."""
    if len(data) < _HEADER.size:
        shown = data[: len(mark)]
        raise Unsealed(TRUNCATED if mark.startswith(shown) else FOREIGN)
    found_mark, found_version, length, digest = _HEADER.unpack_from(data)
    if found_mark != mark:
        raise Unsealed(FOREIGN)
    if found_version != version:
        raise Unsealed(VERSION, found_version)
    body = data[_HEADER.size :]
    if len(body) < length:
        raise Unsealed(TRUNCATED)
    if len(body) > length or hashlib.sha256(body).digest() != digest or length < _NAME.size:
        raise Unsealed(DAMAGED)
    (size,) = _NAME.unpack_from(body)
    found_name = body[_NAME.size : _NAME.size + size].decode(errors="replace")
    if found_name != name:
        raise Unsealed(MISPLACED, found_name)
    return body[_NAME.size + size :]
