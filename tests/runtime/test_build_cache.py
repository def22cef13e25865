"""Whole builds on disk (`build_cache`): a second process that builds the same schedule loads
the kernel without lowering or compiling; any difference in algorithm, schedule, arguments or
target is another entry; the text keying them (`schedule.canonical`) ignores source lines only;
entries that are damaged or cannot be written cost a build, never a wrong kernel."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import schedlang as sl
from schedlang.schedule.canonical import Uncacheable, canonical_text

PROGRAM = textwrap.dedent(
    """
    import sys
    import numpy as np
    import schedlang as sl
    from schedlang import driver

    forbid = sys.argv[1] == "forbid"
    if forbid:  # a cached build neither lowers nor compiles
        def refuse(*args, **kwargs):
            raise AssertionError("lowered again")
        driver.lower = driver.lower_for_gpu = refuse
    n = sl.var("n")
    a = sl.placeholder((n, 7), name="A")
    k = sl.reduce_axis((0, 7), "k")
    c = sl.compute((n,), lambda i: sl.sum(a[i, k] * 2.5, axis=k), name="C")
    s = sl.create_schedule(c.op)
    outer, inner = s[c].split(c.op.axis[0], factor=4)
    s[c].parallel(outer)
    kernel = sl.build(s, [a, c])
    x = np.random.default_rng(1).random((37, 7), dtype=np.float32)
    out = np.full(37, np.nan, np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, sl.reference(c, {a: x}), rtol=1e-6)
    print("ok")
    """
)


def _run(script: str, cache, *args: str) -> str:
    env = {"SCHEDLANG_CACHE_DIR": str(cache), "PATH": "", "PYTHONPATH": ":".join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_second_process_loads_the_cpu_build_without_lowering(tmp_path):
    assert _run(PROGRAM, tmp_path, "build") == "ok"
    assert len(list((tmp_path / "builds").rglob("*.pkl"))) == 1
    assert _run(PROGRAM, tmp_path, "forbid") == "ok"


REVIVAL = textwrap.dedent(
    """
    import sys
    import numpy as np
    import schedlang as sl

    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * 3.0 - 2.0, name="C")
    s = sl.create_schedule(c.op)
    outer, inner = s[c].split(c.op.axis[0], factor=8)
    s[c].vectorize(inner)
    s[c].parallel(outer)  # the parallel runtime is linked from disk too
    if sys.argv[1] == "first":  # builds, stores the build and exports it
        sl.build(s, [a, c]).export(sys.argv[2])
        sys.exit()
    before = set(sys.modules)
    kernel = sl.build(s, [a, c]) if sys.argv[1] == "build" else sl.load(sys.argv[2])
    x = np.random.default_rng(2).standard_normal(29).astype(np.float32)
    np.testing.assert_allclose(kernel(x), sl.reference(c, {a: x}), rtol=1e-6)
    print(" ".join(sorted(set(sys.modules) - before)))
    """
)

# What a revival must not import: the polyhedral layer, the GPU's code generator, the CPU's
# LLVM IR translator, LLVM itself (a revival links object code, it makes none, and without
# llvmlite.binding no LLVM can have compiled anything).
NOT_FOR_A_REVIVAL = (
    "islpy",
    "llvmlite.binding",
    "llvmlite.ir",
    "schedlang.poly",
    "schedlang.codegen.nvptx",
    "schedlang.codegen.cpu.cache",
    "schedlang.codegen.cpu.module",
    "schedlang.codegen.cpu.target",
    "schedlang.codegen.llvm.stmt",
    "schedlang.codegen.llvm.expr",
    "schedlang.driver",
    "statistics",
)


@pytest.mark.parametrize("how", ["build", "load"])
def test_a_revived_cpu_kernel_imports_no_compiler_it_does_not_need(tmp_path, how):
    """A second process building a kernel on disk, or loading a saved one, links object code:
    each module of the code generators it imported would be tens of milliseconds of start."""
    path = str(tmp_path / "kernel.sl")
    _run(REVIVAL, tmp_path, "first", path)
    imported = _run(REVIVAL, tmp_path, how, path).split()
    assert "schedlang.runtime.kernel" in imported  # measured from before the revival
    wrong = [
        m
        for m in imported
        if m.split(".")[0] in NOT_FOR_A_REVIVAL
        or m.startswith(tuple(f"{name}." for name in NOT_FOR_A_REVIVAL))
        or m in NOT_FOR_A_REVIVAL
    ]
    assert not wrong, wrong


GPU_PROGRAM = textwrap.dedent(
    """
    import sys
    import schedlang as sl
    from schedlang import driver

    if sys.argv[1] == "forbid":
        def refuse(*args, **kwargs):
            raise AssertionError("lowered again")
        driver.lower = driver.lower_for_gpu = refuse
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * a[i] + 1, name="B")
    s = sl.create_schedule(b.op)
    bx, tx = s[b].split(b.op.axis[0], factor=64)
    s[b].bind(bx, sl.thread_axis("blockIdx.x"))
    s[b].bind(tx, sl.thread_axis("threadIdx.x"))
    kernel = sl.build(s, [a, b], target="cuda -arch=sm_80")
    print(kernel.target, len(kernel.llvm_ir) > 0, kernel.launch_config[0].block)
    print(kernel.ptx)
    """
)


def test_a_second_process_loads_the_cuda_build_and_its_ptx(tmp_path):
    first = _run(GPU_PROGRAM, tmp_path, "build")
    second = _run(GPU_PROGRAM, tmp_path, "forbid")
    assert first == second
    assert first.startswith("cuda -arch=sm_80 True (64, 1, 1)")


def _vector_add(factor=8, same_input=False, scale=1.0):
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    b = sl.placeholder((n,), name="A")  # the same name, another tensor
    c = sl.compute((n,), lambda i: a[i] * scale + (a if same_input else b)[i], name="C")
    s = sl.create_schedule(c.op)
    s[c].split(c.op.axis[0], factor=factor)
    return s, [a, b, c]


def test_the_text_tells_apart_what_makes_another_kernel():
    base = canonical_text(*_vector_add())
    assert base == canonical_text(*_vector_add())  # built again: the same text
    assert base != canonical_text(*_vector_add(factor=16))  # the schedule
    assert base != canonical_text(*_vector_add(same_input=True))  # tensors of one name
    assert base != canonical_text(*_vector_add(scale=1.5))  # a constant
    s, (a, b, c) = _vector_add()
    assert base != canonical_text(s, [b, a, c])  # the arguments' order
    n = sl.var("n")
    d = sl.placeholder((n,), "float64", name="A")
    e = sl.compute((n,), lambda i: d[i] * 1.0 + d[i], name="C")
    assert canonical_text(sl.create_schedule(e.op), [d, e]) != base  # the dtype


def test_the_source_line_of_a_primitive_is_not_part_of_the_text():
    s, args = _vector_add()
    t, _ = _vector_add()
    assert [r.loc for r in s.records] == [r.loc for r in t.records]
    u = sl.create_schedule(args[2].op)
    u[args[2]].split(args[2].op.axis[0], factor=8)  # the same split, written on another line
    assert u.records[0].loc != s.records[0].loc
    assert canonical_text(u, args) == canonical_text(s, args)


def test_something_without_a_canonical_text_makes_the_build_uncached():
    s, args = _vector_add()
    s.records.append(lambda: None)
    with pytest.raises(Uncacheable, match="a function in the schedule"):
        canonical_text(s, args)


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(tmp_path))
    return tmp_path


def _check(kernel, n=29):
    x, y = (np.random.default_rng(k).random(n, dtype=np.float32) for k in range(2))
    out = np.full(n, np.nan, np.float32)
    kernel(x, y, out)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)


def test_a_damaged_entry_is_built_again_and_replaced(cache):
    s, args = _vector_add()
    _check(sl.build(s, args))
    (entry,) = (cache / "builds").rglob("*.pkl")
    whole = entry.read_bytes()
    entry.write_bytes(whole[: len(whole) // 2])
    _check(sl.build(s, args))
    assert entry.read_bytes() == whole


def _scaled(scale: float):
    n = sl.var("n")
    a = sl.placeholder((n,), name="A")
    c = sl.compute((n,), lambda i: a[i] * scale - 1.0, name="C")
    return sl.create_schedule(c.op), [a, c]


def test_a_build_copied_under_another_schedules_key_is_built_again(cache):
    """A backup restored or a folder synced can put one schedule's build where another's
    belongs: the entry is sealed with its name, so the second schedule is built, not loaded
    as the first."""
    first, second = _scaled(2.0), _scaled(3.0)
    sl.build(*first)
    (one,) = (cache / "builds").rglob("*.pkl")
    sl.build(*second)
    (two,) = set((cache / "builds").rglob("*.pkl")) - {one}
    good = two.read_bytes()
    two.write_bytes(one.read_bytes())
    x = np.random.default_rng(4).standard_normal(31).astype(np.float32)
    s, (a, c) = second
    out = sl.build(s, [a, c])(x)
    np.testing.assert_allclose(out, sl.reference(c, {a: x}), rtol=1e-6)
    assert two.read_bytes() == good  # replaced


def test_the_warnings_of_a_build_are_said_again_when_it_is_loaded(cache):
    def build():
        a = sl.placeholder((8, 50), name="A")
        b = sl.compute((8, 50), lambda i, j: a[i, j] + 1, name="B")
        s = sl.create_schedule(b.op)
        s[b].vectorize(b.op.axis[0])  # its body holds a loop: it runs as a scalar loop
        return sl.build(s, [a, b])

    for _ in range(2):  # built, then loaded
        with pytest.warns(sl.SchedlangWarning, match="runs as a scalar loop"):
            build()
    assert len(list((cache / "builds").rglob("*.pkl"))) == 1


def test_an_unwritable_folder_builds_without_storing(monkeypatch, tmp_path):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", str(blocker))
    monkeypatch.setattr("schedlang.codegen.disk_cache._warned", False)
    s, args = _vector_add()
    with pytest.warns(sl.SchedlangWarning, match="cannot write to"):
        _check(sl.build(s, args))


def test_threads_building_one_schedule_at_once_all_get_working_kernels(cache):
    kernels = []

    def build():
        s, args = _vector_add(factor=4)
        kernels.append(sl.build(s, args))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(kernels) == 4
    for kernel in kernels:
        _check(kernel)
    assert len(list((cache / "builds").rglob("*.pkl"))) == 1


def test_computes_with_several_outputs_have_a_canonical_text():
    """A multi-output compute's ops refer to each other through their group: written once,
    numbered after, and two such algorithms that differ in one output are told apart."""

    def pair(second):
        n = sl.var("n")
        a = sl.placeholder((n,), name="A")
        p, q = sl.compute((n,), lambda i: (a[i] + 1, second(a[i])), name="P")
        return canonical_text(sl.create_schedule(p), [a, p, q])

    same = pair(lambda x: x * 2)
    assert same == pair(lambda x: x * 2) and "Outputs(" in same
    assert same != pair(lambda x: x * 3)
