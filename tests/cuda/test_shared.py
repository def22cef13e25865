"""Shared memory without a GPU: each kernel's layout is made once, by the plan, and both the
code and the launch follow it; up to 48 KB as static arrays, above as dynamic shared memory
that the kernel opts into."""

from __future__ import annotations

import re

import numpy as np
import pytest

import schedlang as sl
from schedlang.codegen.nvptx import compile as nvptx_compile
from schedlang.codegen.nvptx import shared_layout

from .fake_driver import FakeDriver, install
from .kernels import REDUCTIONS, SCHEDULES, gemm_shared, shared_rows
from .ptxas import assemble

EXTERN = ".extern .shared .align 16 .b8 dynamic_shared[];"
ALL = {**{k: (f, ()) for k, f in SCHEDULES.items()}, **{k: v[:2] for k, v in REDUCTIONS.items()}}


def build(make, *args):
    s, inputs, outputs = make(*args)
    return sl.build(s, inputs + outputs, target="cuda")


def immediates(ptx: str) -> list[int]:
    """The constant offsets of the shared accesses' addresses."""
    accesses = re.findall(r"(?:ld|st)\.shared\S*\s+(?:\S+, )?\[[^\]+]*\+(\d+)\]", ptx)
    return [int(n) for n in accesses]


@pytest.mark.parametrize(("n", "nbytes"), [(8192, 65536), (12800, 102400)])
def test_more_than_48_kb_is_dynamic_shared_memory(n, nbytes):
    kernel = build(shared_rows, 3, n)
    (config,) = kernel.launch_config
    assert config.shared_bytes == nbytes and config.dynamic_shared
    (plan,) = kernel._compiled.plan.kernels
    assert plan.dynamic_shared_bytes == nbytes
    report = assemble(kernel.ptx)
    assert report.shared_bytes == 0  # nothing static
    assert report.spill_bytes == 0 and report.stack_bytes == 0
    assert EXTERN in kernel.ptx
    assert not re.search(r"^\s*\.shared", kernel.ptx, re.MULTILINE)  # no static array


def instructions(ptx: str) -> int:
    body = ptx[ptx.index("{") :]
    lines = [line.strip() for line in body.splitlines() if line.startswith("\t")]
    return len([line for line in lines if not line.startswith((".", "//"))])


@pytest.mark.parametrize("n", [8192, 12800])
def test_dynamic_regions_cost_no_instructions(monkeypatch, n):
    """The same kernel with its rows as static arrays (which ptxas would refuse at this size)
    needs no fewer instructions: the regions' offsets fold into the addresses."""
    monkeypatch.setenv("SCHEDLANG_CACHE_DIR", "off")  # builds on disk know no other limit
    dynamic = build(shared_rows, 3, n).ptx
    monkeypatch.setattr(shared_layout, "STATIC_SHARED_LIMIT", 1 << 30)
    monkeypatch.setattr(nvptx_compile, "_memory", {})
    static = build(shared_rows, 3, n).ptx
    assert EXTERN not in static
    assert instructions(dynamic) <= instructions(static)


def test_48_kb_stays_static():
    kernel = build(shared_rows, 3, 6144)
    (config,) = kernel.launch_config
    assert config.shared_bytes == 49152 and not config.dynamic_shared
    assert assemble(kernel.ptx).shared_bytes == 49152
    assert EXTERN not in kernel.ptx


def offsets(kernel) -> list[set[int]]:
    """Per kernel of the plan, the offsets of its regions."""
    return [
        {offset for regions in k.shared.regions.values() for offset, _ in regions}
        for k in kernel._compiled.plan.kernels
    ]


@pytest.mark.usefixtures("all_dynamic")
@pytest.mark.parametrize("name", sorted(ALL))
def test_the_code_puts_dynamic_regions_where_the_plan_says(name):
    """Every schedule with its shared memory dynamic: the code addresses exactly the plan's
    regions, ptxas finds no static shared memory left, and the launch passes the plan's size."""
    make, args = ALL[name]
    kernel = build(make, *args)
    used = re.findall(r'@"dynamic_shared", i64 (\d+)', kernel.llvm_ir)
    assert {int(n) for n in used} == set().union(*offsets(kernel))
    report = assemble(kernel.ptx)
    assert report.shared_bytes == 0
    shared = [c.shared_bytes for c in kernel.launch_config]
    assert all(c.dynamic_shared == (c.shared_bytes > 0) for c in kernel.launch_config)
    assert (EXTERN in kernel.ptx) == any(shared)
    if any(shared):
        assert max(immediates(kernel.ptx), default=0) < max(shared)


@pytest.mark.parametrize("name", sorted(ALL))
def test_static_arrays_add_up_to_the_plan(name):
    make, args = ALL[name]
    kernel = build(make, *args)
    report = assemble(kernel.ptx)
    assert report.shared_bytes == sum(c.shared_bytes for c in kernel.launch_config)
    assert not any(c.dynamic_shared for c in kernel.launch_config)


def test_a_kernel_above_48_kb_opts_in_once_and_passes_its_size(monkeypatch):
    fake = FakeDriver(parameters=3)
    install(monkeypatch, fake)
    kernel = build(shared_rows)
    x = np.ones((3, 8192), np.float32)
    kernel(x, x.copy(), np.empty_like(x))
    kernel.time(x, x.copy(), np.empty_like(x), repeat=2)
    opt_ins = [c.args for c in fake.calls if c.name == "cuFuncSetAttribute"]
    assert opt_ins == [("function main_kernel0", "MAX_DYNAMIC_SHARED_SIZE_BYTES", 65536)]
    names = fake.names()
    assert names.index("cuFuncSetAttribute") < names.index("cuLaunchKernel")
    launches = [c.args for c in fake.calls if c.name == "cuLaunchKernel"]
    assert len(launches) == 1 + 1 + 2 and all(a[3] == 65536 for a in launches)


def test_static_shared_memory_is_not_passed_at_launch(monkeypatch):
    fake = FakeDriver()
    install(monkeypatch, fake)
    kernel = build(gemm_shared, 13, 10)
    a, b = np.ones((13, 11), np.float32), np.ones((11, 10), np.float32)
    kernel(a, b, np.empty((13, 10), np.float32))
    assert "cuFuncSetAttribute" not in fake.names()
    (launch,) = [c.args for c in fake.calls if c.name == "cuLaunchKernel"]
    assert launch[3] == 0


def test_more_than_the_device_gives_is_refused_before_loading(monkeypatch):
    fake = FakeDriver()
    install(monkeypatch, fake)
    monkeypatch.setattr("schedlang.runtime.cuda.driver.load_module", pytest.fail, raising=True)
    kernel = build(shared_rows, 1, 30720)
    x = np.ones((1, 30720), np.float32)
    message = (
        r"kernel 'main/main_kernel0' needs 245760 bytes of shared memory per block, but H100 "
        r"gives a block at most 232448 \(opting in above 49152\); stage smaller tiles"
    )
    with pytest.raises(sl.LaunchError, match=message):
        kernel(x, x.copy(), np.empty_like(x))
    assert "cuLaunchKernel" not in fake.names()
