"""Microseconds per call of a small kernel, against its peers in the same process.

A vector add of 1,024 floats (three arrays) called in a loop: on the CPU with numpy arrays
against ``numpy.add(a, b, out=c)``; on a GPU, where there is one, with torch tensors, cupy
arrays and ``sl`` device arrays against ``torch.add(a, b, out=c)`` (and a Triton kernel where
Triton is installed). What is timed is the whole call as a user makes it, the median of
several rounds of many calls (so a noisy machine cannot pick the best round), the peer
interleaved round by round with the kernel. Two times per call: the caller's (the loop alone:
what a call costs the program that makes it) and the whole loop's until the device is done,
which a GPU running short kernels back to back bounds from below. GPU rounds are 500 calls, so
that the driver's queue of launches never fills and holds a call back.

CPU parallel loops: the same add with its loop ``parallel`` against the serial kernel, and a
loop of one iteration per thread (almost no work) parallel against serial, whose difference
is what a parallel loop's fork-join costs.

    python benchmarks/launch.py [--calls 20000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import schedlang as sl  # noqa: E402
from schedlang.platform_info import parallel_threads  # noqa: E402

N = 1024


def vector_add(target: str, parallel: bool = False, n: int = N):
    a = sl.placeholder((n,), name="A")
    b = sl.placeholder((n,), name="B")
    c = sl.compute((n,), lambda i: a[i] + b[i], name="C")
    s = sl.create_schedule(c.op)
    if parallel:
        s[c].parallel(c.op.axis[0])
    if target == "cuda":
        bx, tx = s[c].split(c.op.axis[0], factor=256)
        s[c].bind(bx, sl.thread_axis("blockIdx.x"))
        s[c].bind(tx, sl.thread_axis("threadIdx.x"))
    return sl.build(s, [a, b, c], target=target)


def per_call(fn: Callable[[], object], calls: int, sync: Callable[[], None]) -> tuple[float, float]:
    """Microseconds per call of `fn` over `calls` calls: the loop's, and until `sync`."""
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    issued = time.perf_counter()
    sync()
    done = time.perf_counter()
    return (issued - start) / calls * 1e6, (done - start) / calls * 1e6


def compare(rows: list, name: str, ours, peer_name: str, peer, calls: int, rounds: int, sync):
    for _ in range(3):  # warm-up
        ours(), peer()
    mine, theirs = [], []
    for _ in range(rounds):
        mine.append(per_call(ours, calls, sync))
        theirs.append(per_call(peer, calls, sync))
    m, t = (statistics.median(r[0] for r in x) for x in (mine, theirs))
    m_done, t_done = (statistics.median(r[1] for r in x) for x in (mine, theirs))
    spread = (max(r[0] for r in mine) - min(r[0] for r in mine)) / m
    rows.append((name, m, spread, peer_name, t, m_done, t_done))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    rows: list = []
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (2, N)).astype(np.float32)
    c = np.full(N, np.nan, np.float32)
    kernel = vector_add("cpu")
    kernel(a, b, c)
    assert np.array_equal(c, a + b)
    compare(
        rows,
        "cpu, numpy arrays",
        lambda: kernel(a, b, c),
        "numpy.add",
        lambda: np.add(a, b, out=c),
        args.calls,
        args.rounds,
        lambda: None,
    )
    fork_join = _parallel(rows, a, b, c, args.calls, args.rounds)
    if sl.cuda_available():
        _gpu(rows, 500, args.rounds * 4)
    print("| call | us per call | spread | peer | peer us | ours/peer | waited: ours, peer |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, m, spread, peer, t, m_done, t_done in rows:
        waited = f"{m_done:.2f}, {t_done:.2f}"
        print(f"| {name} | {m:.2f} | {spread:.0%} | {peer} | {t:.2f} | {m / t:.2f}x | {waited} |")
    print(f"\nfork-join of a parallel loop on {parallel_threads()} threads: {fork_join:.2f} us")


def _parallel(rows: list, a, b, c, calls: int, rounds: int) -> float:
    """The parallel rows; returns the fork-join's microseconds."""
    serial, parallel = vector_add("cpu"), vector_add("cpu", parallel=True)
    parallel(a, b, c)
    assert np.array_equal(c, a + b)
    ours, peer = (lambda: parallel(a, b, c)), (lambda: serial(a, b, c))
    compare(rows, "cpu, parallel add", ours, "serial add", peer, calls, rounds, lambda: None)
    p = parallel_threads()
    x, y, z = a[:p].copy(), b[:p].copy(), c[:p].copy()
    serial, parallel = vector_add("cpu", n=p), vector_add("cpu", parallel=True, n=p)
    ours, peer = (lambda: parallel(x, y, z)), (lambda: serial(x, y, z))
    name = f"cpu, parallel loop of {p}"
    compare(rows, name, ours, "serial loop", peer, calls, rounds, lambda: None)
    return rows[-1][1] - rows[-1][4]


def _gpu(rows: list, calls: int, rounds: int) -> None:
    import torch

    kernel = vector_add("cuda")
    a, b = (torch.rand(N, device="cuda") for _ in range(2))
    c = torch.full((N,), float("nan"), device="cuda")
    kernel(a, b, c)
    assert torch.equal(c, a + b)
    sync = torch.cuda.synchronize
    peer = lambda: torch.add(a, b, out=c)  # noqa: E731
    compare(
        rows, "cuda, torch tensors", lambda: kernel(a, b, c), "torch.add", peer, calls, rounds, sync
    )
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        x, y = (cupy.asarray(t) for t in (a, b))
        z = cupy.empty(N, cupy.float32)
        ours = lambda: kernel(x, y, z)  # noqa: E731
        compare(rows, "cuda, cupy arrays", ours, "torch.add", peer, calls, rounds, sync)
    x, y, z = (sl.array(t.cpu().numpy(), device="cuda") for t in (a, b, c))
    ours = lambda: kernel(x, y, z)  # noqa: E731
    compare(rows, "cuda, sl device arrays", ours, "torch.add", peer, calls, rounds, sync)


if __name__ == "__main__":
    main()
