"""The disk cache (in SCHEDLANG_CACHE_DIR here) is an optimisation: an entry that is cut short,
emptied, random, altered or from an older format is compiled again and replaced, and a folder
that cannot be written costs one warning, never a failed build or wrong code."""

from __future__ import annotations

import errno
import os
import stat
import struct
import warnings

import numpy as np
import pytest

import schedlang as sl
from schedlang import build_cache
from schedlang.codegen import disk_cache
from schedlang.codegen.cpu import cache
from schedlang.codegen.cpu import jit as cpu_jit

PAYLOAD = bytes(range(256)) * 3 + b"\x7fELF tail"
UNWRITABLE = "cannot write to '.*'.*SCHEDLANG_CACHE_DIR=off to turn the disk cache off"


@pytest.fixture
def fresh(monkeypatch):
    """No compiled code in memory and no warning given yet, for this test only."""
    monkeypatch.setattr(cache, "_memory", {})
    monkeypatch.setattr(disk_cache, "_warned", False)


@pytest.fixture
def cache_dir(monkeypatch, tmp_path, fresh):
    """The disk cache on in a fresh folder, whole builds left out: these tests are of the
    object files, which a build kept on disk would skip (`build_cache` has its own)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(folder))
    monkeypatch.setattr(build_cache, "_folder", lambda *args: None)
    return folder


@pytest.fixture
def compiles(monkeypatch) -> list[int]:
    """One entry per kernel's object file LLVM compiles (not its guard's, which one kernel of
    the same shape may have compiled earlier in the process, nor the interrupt handler's,
    which the process's first interruptible call compiles, in whichever test that is)."""
    made: list[int] = []
    original = cpu_jit.object_code

    def counted(text: str) -> bytes:
        if "schedlang_guard" not in text and "schedlang_interrupt" not in text:
            made.append(1)
        return original(text)

    monkeypatch.setattr(cpu_jit, "object_code", counted)
    return made


# The verification of one entry.


def test_a_packed_payload_unpacks_to_itself():
    assert disk_cache.unpack(disk_cache.pack(PAYLOAD, "a.o"), "a.o") == PAYLOAD
    assert disk_cache.unpack(disk_cache.pack(b"", "a.o"), "a.o") == b""


def test_an_entry_unpacks_only_under_the_name_it_was_packed_for():
    entry = disk_cache.pack(PAYLOAD, "0c20.o")
    assert disk_cache.unpack(entry, "d41d.o") is None
    assert disk_cache.unpack(entry, "0c20.o.bak") is None


def _flipped(entry: bytes, at: int) -> bytes:
    return entry[:at] + bytes([entry[at] ^ 0x40]) + entry[at + 1 :]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda e: b"", id="empty"),
        pytest.param(lambda e: e[:10], id="cut-in-header"),
        pytest.param(lambda e: e[:-1], id="cut-in-payload"),
        pytest.param(lambda e: e + b"\0", id="extended"),
        pytest.param(lambda e: _flipped(e, 0), id="magic"),
        pytest.param(lambda e: _flipped(e, 8), id="version"),
        pytest.param(lambda e: _flipped(e, 12), id="length"),
        pytest.param(lambda e: _flipped(e, 20), id="digest"),
        pytest.param(lambda e: _flipped(e, 54), id="name"),
        pytest.param(lambda e: _flipped(e, len(e) - 300), id="payload"),
        pytest.param(lambda e: np.random.default_rng(3).bytes(len(e)), id="random"),
        pytest.param(lambda e: PAYLOAD, id="older-format"),
    ],
)
def test_a_damaged_entry_does_not_unpack(damage):
    assert disk_cache.unpack(damage(disk_cache.pack(PAYLOAD, "a.o")), "a.o") is None


def test_every_single_flipped_bit_is_caught():
    entry = disk_cache.pack(PAYLOAD[:40], "a.o")
    for at in range(len(entry)):
        for bit in range(8):
            bad = entry[:at] + bytes([entry[at] ^ (1 << bit)]) + entry[at + 1 :]
            assert disk_cache.unpack(bad, "a.o") is None, (at, bit)


# Reading and writing one entry.


def test_what_is_written_reads_back(tmp_path, fresh):
    path = tmp_path / "deep" / "entry.o"
    assert disk_cache.write(path, PAYLOAD)
    assert disk_cache.read(path) == PAYLOAD
    assert path.read_bytes() != PAYLOAD  # the header is on disk too
    assert [p.name for p in path.parent.iterdir()] == ["entry.o"]


def test_a_missing_or_unreadable_entry_is_a_miss(tmp_path, monkeypatch):
    assert disk_cache.read(tmp_path / "absent.o") is None
    assert disk_cache.read(tmp_path) is None  # a folder where the file should be
    entry = tmp_path / "entry.o"
    entry.write_bytes(disk_cache.pack(PAYLOAD, entry.name))

    def refused(self):
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(type(entry), "read_bytes", refused)
    assert disk_cache.read(entry) is None


def test_load_or_make_replaces_a_damaged_entry(tmp_path):
    path = tmp_path / "entry.o"
    path.write_bytes(disk_cache.pack(PAYLOAD, path.name)[:-5])
    made = []
    assert disk_cache.load_or_make(path, lambda: made.append(1) or PAYLOAD) == PAYLOAD
    assert made == [1] and disk_cache.read(path) == PAYLOAD
    assert disk_cache.load_or_make(path, lambda: pytest.fail("compiled again")) == PAYLOAD


def test_load_or_make_without_a_folder_only_makes():
    assert disk_cache.load_or_make(None, lambda: PAYLOAD) == PAYLOAD


def test_an_unwritable_folder_warns_once_and_writes_nothing(tmp_path, fresh):
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a folder")
    with pytest.warns(sl.SchedlangWarning, match=UNWRITABLE) as caught:
        assert not disk_cache.write(blocker / "one.o", PAYLOAD)
        assert not disk_cache.write(blocker / "two.o", PAYLOAD)
    assert len(caught) == 1
    assert str(blocker) in str(caught[0].message)
    assert blocker.read_bytes() == b"not a folder"


def test_a_full_disk_leaves_no_partial_file(tmp_path, monkeypatch, fresh):
    real_fdopen = os.fdopen

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def write(self, data):
            self.handle.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(disk_cache.os, "fdopen", lambda fd, mode: Full(real_fdopen(fd, mode)))
    with pytest.warns(sl.SchedlangWarning, match="No space left on device"):
        assert not disk_cache.write(tmp_path / "entry.o", PAYLOAD)
    assert list(tmp_path.iterdir()) == []


# Whole builds through the CPU object cache.


def _kernel(scale: float = 2.0):
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.placeholder((n,), name="B")
    c = sl.compute((n,), lambda i: a[i] * scale + b[i], name="C")
    s = sl.create_schedule(c)
    _, inner = s[c].split(c.op.axis[0], factor=8)
    s[c].vectorize(inner)
    return s, a, b, c


def _build_and_check(scale: float = 2.0) -> None:
    s, a, b, c = _kernel(scale)
    kernel = sl.build(s, [a, b, c])
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(1001, np.float32), rng.standard_normal(1001, np.float32)
    out = np.full(1001, np.nan, np.float32)
    kernel(x, y, out)
    np.testing.assert_allclose(out, sl.reference(c, {a: x, b: y}), rtol=1e-5, atol=1e-6)


def _flip_machine_code(entry: bytes) -> bytes:
    """`entry` with every byte of its executable sections inverted (the object is ELF64 here):
    linked unchecked, such code runs into illegal instructions instead of failing to link."""
    start = entry.index(b"\x7fELF")
    obj = bytearray(entry[start:])
    table, entry_size, count = struct.unpack_from("<Q", obj, 0x28)[0], obj[0x3A], obj[0x3C]
    flipped = 0
    for index in range(count):
        flags, _, offset, size = struct.unpack_from("<QQQQ", obj, table + index * entry_size + 8)
        if flags & 0x4 and size:  # SHF_EXECINSTR
            obj[offset : offset + size] = bytes(v ^ 0xFF for v in obj[offset : offset + size])
            flipped += size
    assert flipped, "no machine code found in the object"
    return entry[:start] + bytes(obj)


def _kernel_objects(folder):
    """The kernels' object files. A kernel's guard (`codegen.cpu.trampoline`) and the call's
    interrupt check (`runtime.interrupt`) may be there too, or only in memory, where another
    test of the same process made them first: which, depends on the order tests run in."""
    helpers = ("guard-", "interrupt-")
    return sorted(p for p in folder.glob("*.o") if not p.name.startswith(helpers))


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda e: e[: len(e) // 2], id="truncated"),
        pytest.param(lambda e: b"", id="empty"),
        pytest.param(lambda e: np.random.default_rng(5).bytes(len(e)), id="random"),
        pytest.param(_flip_machine_code, id="flipped"),
        pytest.param(lambda e: e[e.index(b"\x7fELF") :], id="older-format"),
    ],
)
def test_a_damaged_object_is_compiled_again_and_replaced(cache_dir, compiles, damage):
    _build_and_check()
    entries = _kernel_objects(cache_dir)
    assert len(entries) == 1 and compiles == [1]
    good = entries[0].read_bytes()
    for entry in entries:
        entry.write_bytes(damage(entry.read_bytes()))
    cache.clear_memory_cache()
    _build_and_check()
    assert compiles == [1, 1]
    assert entries[0].read_bytes() == good  # rewritten (the object code is deterministic)
    cache.clear_memory_cache()
    _build_and_check()
    assert compiles == [1, 1]  # and used


def test_an_object_copied_under_another_kernels_key_is_compiled_again(cache_dir, compiles):
    """A backup restored or a folder synced can put one kernel's object under another's name:
    the object is sealed with its name, so the second kernel is compiled, not run as the first."""
    _build_and_check(2.0)
    (first,) = _kernel_objects(cache_dir)
    _build_and_check(3.0)
    (second,) = set(_kernel_objects(cache_dir)) - {first}
    good = second.read_bytes()
    second.write_bytes(first.read_bytes())
    cache.clear_memory_cache()
    _build_and_check(3.0)
    assert compiles == [1, 1, 1]
    assert second.read_bytes() == good


def test_a_cache_path_that_is_a_file_warns_once_and_builds(monkeypatch, tmp_path, fresh):
    blocker = tmp_path / "cache"
    blocker.write_text("a file, not a folder")
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(blocker))
    with pytest.warns(sl.SchedlangWarning, match=UNWRITABLE) as caught:
        _build_and_check(2.0)
        _build_and_check(3.0)  # a second kernel, a second failed write
    assert len(caught) == 1
    assert blocker.read_text() == "a file, not a folder"


def test_a_refused_write_warns_once_and_builds(cache_dir, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(cache_dir))

    monkeypatch.setattr(disk_cache.tempfile, "mkstemp", refused)
    with pytest.warns(sl.SchedlangWarning, match="PermissionError: Permission denied") as caught:
        _build_and_check(2.0)
        _build_and_check(3.0)
    assert len(caught) == 1 and list(cache_dir.iterdir()) == []


def test_a_read_only_folder_warns_once_and_builds(cache_dir):
    cache_dir.mkdir()
    cache_dir.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(cache_dir, os.W_OK):
            pytest.skip("this user writes through file permissions (root)")
        with pytest.warns(sl.SchedlangWarning, match=UNWRITABLE) as caught:
            _build_and_check(2.0)
            _build_and_check(3.0)
        assert len(caught) == 1 and list(cache_dir.iterdir()) == []
    finally:
        cache_dir.chmod(stat.S_IRWXU)


def test_a_healthy_cache_builds_without_warnings(cache_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _build_and_check()
    assert len(_kernel_objects(cache_dir)) == 1
