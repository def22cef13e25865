"""Templates the tuner tests search: small, with odd sizes, importable by compile processes."""

from __future__ import annotations

import os

import schedlang as sl


def matmul_algorithm(n: int, m: int, k: int, scale: float = 1.0):
    a = sl.placeholder((n, k), name="A")
    b = sl.placeholder((k, m), name="B")
    r = sl.reduce_axis((0, k), name="k")
    c = sl.compute((n, m), lambda i, j: sl.sum(a[i, r] * b[r, j] * scale, axis=r), name="C")
    return a, b, c


@sl.tune.template
def matmul(cfg, n, m, k):
    """Tiles, and which inner loop is innermost and vectorized (the k orders are illegal:
    a vectorized reduction)."""
    a, b, c = matmul_algorithm(n, m, k)
    s = sl.create_schedule(c)
    i, j = s[c].op.axis
    io, ii = cfg.split("tile_i", s[c], i, candidates=[[-1, 4], [-1, 8]])
    jo, ji = cfg.split("tile_j", s[c], j, candidates=[[-1, 8], [-1, 16]])
    inner = cfg.order("inner", ["i", "j", "k"], candidates=[[0, 2, 1], [0, 1, 2]])
    ko, ki = s[c].split(s[c].op.reduce_axis[0], factor=4)
    loops = {"i": ii, "j": ji, "k": ki}
    s[c].reorder(io, jo, ko, *(loops[name] for name in inner))
    s[c].vectorize(loops[inner[-1]])
    return s, [a, b, c]


@sl.tune.template
def faulty(cfg, n):
    """A knob whose choices misbehave: 'wrong' schedules another algorithm (the kernel then
    computes other values than the task's), 'raise' is a bug of the template, 'die' kills
    the process building it."""
    fault = cfg.choice("fault", ["none", "wrong", "raise", "die"])
    cfg.choice("tile", [4, 8])
    a, b, c = matmul_algorithm(n, n, n, scale=1.5 if fault == "wrong" else 1.0)
    if fault == "raise":
        raise ValueError("a bug in the template")
    if fault == "die":
        os._exit(3)
    s = sl.create_schedule(c)
    s[c].split(s[c].op.axis[1], factor=cfg["tile"].val)
    return s, [a, b, c]


@sl.tune.template
def gpu_scale(cfg, n):
    """``B = 2 A`` on the GPU, threads per block a knob; 'wrong' scales by 3."""
    threads = cfg.choice("threads", [32, 64, 128])
    wrong = cfg.flag("wrong")
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * (3.0 if wrong else 2.0), name="B")
    s = sl.create_schedule(b)
    bx, tx = s[b].split(s[b].op.axis[0], factor=threads)
    s[b].bind(bx, sl.thread_axis("blockIdx.x"))
    s[b].bind(tx, sl.thread_axis("threadIdx.x"))
    return s, [a, b]


@sl.tune.template
def slow(cfg, n):
    """A template whose second choice takes ten seconds to make (as a huge unrolled build
    might): a build timeout stops it."""
    import time

    if cfg.flag("slow"):
        time.sleep(10)
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] + 1.0, name="B")
    return sl.create_schedule(b), [a, b]


@sl.tune.template
def recompute(cfg, n):
    """A window sum of window sums; computing the inner sums at the outer one's loop does
    them over again for every output, some thirty times the root schedule's work."""
    a = sl.placeholder((n + 126,), name="A")
    r = sl.reduce_axis((0, 64), name="r")
    b = sl.compute((n + 63,), lambda i: sl.sum(a[i + r], axis=r), name="B")
    q = sl.reduce_axis((0, 64), name="q")
    c = sl.compute((n,), lambda i: sl.sum(b[i + q], axis=q), name="C")
    s = sl.create_schedule(c)
    if cfg.choice("inner_sums", ["root", "at"]) == "at":
        s[b].compute_at(s[c], s[c].op.axis[0])
    return s, [a, c]
