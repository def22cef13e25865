"""CUDA kernels as torch operators on the GPU: torch's operator checks, ``torch.compile`` with
inductor and no graph break, CUDA graphs through ``mode="reduce-overhead"``, and the current
stream. Values against the reference evaluator; outputs are the kernel's own."""

from __future__ import annotations

import itertools

import pytest

import schedlang as sl

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]

_names = itertools.count()


def _gelu_like():
    """y = x * w + b, tiled over blocks and threads, symbolic in both sizes (tails)."""
    n, m = sl.var("n"), sl.var("m")
    x = sl.placeholder((n, m), name="X")
    w = sl.placeholder((m,), name="W")
    y = sl.compute((n, m), lambda i, j: x[i, j] * w[j] + 1, name="Y")
    s = sl.create_schedule(y.op)
    i, j = y.op.axis
    jo, ji = s[y].split(j, factor=64)
    s[y].bind(i, sl.thread_axis("blockIdx.y"))
    s[y].bind(jo, sl.thread_axis("blockIdx.x"))
    s[y].bind(ji, sl.thread_axis("threadIdx.x"))
    return (x, w, y), sl.build(s, [x, w, y], target="cuda")


def _check(tensors, xs, w, ys):
    x, wt, y = tensors
    for a, b in zip(xs, ys):
        want = sl.reference(y, {x: a.cpu().numpy(), wt: w.cpu().numpy()})
        torch.testing.assert_close(b.cpu(), torch.from_numpy(want))  # an FMA's rounding apart


def test_opcheck_passes_on_cuda_tensors():
    _, kernel = _gelu_like()
    op = sl.torch_op(f"slgpu::checked{next(_names)}", kernel)
    args = (torch.randn(37, 130, device="cuda"), torch.randn(130, device="cuda"))
    results = torch.library.opcheck(op, args)
    assert results and all(r == "SUCCESS" for r in results.values())


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_inductor_compiles_around_the_operator_in_one_graph(mode):
    tensors, kernel = _gelu_like()
    op = sl.torch_op(f"slgpu::compiled{next(_names)}", kernel)

    def program(x, w):
        return torch.relu(op(x * 0.5, w)) - 1

    compiled = torch.compile(program, fullgraph=True, mode=mode)
    w = torch.randn(130, device="cuda")
    xs = [torch.randn(37, 130, device="cuda") for _ in range(4)]
    got = [compiled(x, w).clone() for x in xs]  # reduce-overhead replays a CUDA graph
    want = [torch.relu(program_reference(tensors, x * 0.5, w)) - 1 for x in xs]
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)


def program_reference(tensors, x, w):
    x_t, w_t, y_t = tensors
    value = sl.reference(y_t, {x_t: x.cpu().numpy(), w_t: w.cpu().numpy()})
    return torch.from_numpy(value).cuda()


def test_the_operator_runs_on_the_current_stream():
    tensors, kernel = _gelu_like()
    op = sl.torch_op(f"slgpu::stream{next(_names)}", kernel)
    w = torch.randn(130, device="cuda")
    op(torch.randn(5, 130, device="cuda"), w)  # the first call sets the usual one up
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.randn(37, 130, device="cuda")
        doubled = op(x, w) * 2  # queued after the kernel on the same stream
    stream.synchronize()
    _check(tensors, [x], w, [doubled / 2])
