"""The usual call of a CUDA kernel with torch tensors (`runtime.usual_calls`): queued on torch's
current stream, ordered with the torch work around it, captured by CUDA graphs; every other call
taken by the general path with its errors. Outputs are poisoned with NaN."""

from __future__ import annotations

import pytest

import schedlang as sl

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("gpu")]


def _add(m, n, dtype="float32", split=None):
    a = sl.placeholder((m, n), dtype, name="A")
    b = sl.placeholder((m, n), dtype, name="B")
    c = sl.compute((m, n), lambda i, j: a[i, j] + b[i, j], name="C")
    s = sl.create_schedule(c.op)
    i, j = c.op.axis
    if split is not None:  # threads over a tail: a grid of (n - 1) // 8 + 1 blocks in x
        outer, inner = s[c].split(j, factor=split)
        s[c].bind(i, sl.thread_axis("blockIdx.y"))
        s[c].bind(outer, sl.thread_axis("blockIdx.x"))
        s[c].bind(inner, sl.thread_axis("threadIdx.x"))
    else:
        s[c].bind(i, sl.thread_axis("blockIdx.x"))
        s[c].bind(j, sl.thread_axis("threadIdx.x"))
    return sl.build(s, [a, b, c], target="cuda")


def _tensors(m, n, dtype=torch.float32):
    a, b = (torch.randn(m, n, device="cuda").to(dtype) for _ in range(2))
    return a, b, torch.full((m, n), float("nan"), device="cuda", dtype=dtype)


@pytest.mark.parametrize(
    ("m", "n", "split"),
    [(6, 32, None), (sl.var("m"), 32, None), (sl.var("m"), sl.var("n"), 8)],
    ids=["constant", "symbolic", "a tail"],
)
def test_the_usual_call_is_queued_on_the_current_stream(m, n, split):
    kernel = _add(m, n, split=split)
    a, b, c = _tensors(6, 32)
    kernel(a, b, c)  # the first call: the general path, which sets the short one up
    assert kernel._usual is not None
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x, y, z = _tensors(6, 32)
        kernel(x, y, z)
        doubled = z * 2  # queued after the kernel on the same stream
    stream.synchronize()
    torch.testing.assert_close(doubled, (x + y) * 2)


def test_a_cuda_graph_captures_the_call_and_replays_it_on_new_contents():
    kernel = _add(8, 64)
    a, b, c = _tensors(8, 64)
    kernel(a, b, c)  # warm-up outside the capture, as torch asks of every captured op
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernel(a, b, c)
    for _ in range(2):
        a.copy_(torch.randn(8, 64, device="cuda"))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(c, a + b)


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda a, b, c: (a.double(), b, c), TypeError, "must have dtype float32"),
        (lambda a, b, c: (a.t().contiguous().t(), b, c), ValueError, "not C-contiguous"),
        (lambda a, b, c: (a, b, a), ValueError, "overlaps"),
        (lambda a, b, c: (a.reshape(-1)[1:193].reshape(6, 32), b, c), ValueError, "multiple of 16"),
        (lambda a, b, c: (a[:, :16].contiguous(), b, c), ValueError, "must be 32"),
    ],
    ids=["dtype", "strides", "overlap", "misaligned", "shape"],
)
def test_every_other_call_takes_the_general_path_and_its_error(make, error, match):
    kernel = _add(6, 32)
    a, b, c = _tensors(6, 32)
    kernel(a, b, c)
    big = torch.randn(6 * 32 + 8, device="cuda")
    a = big if match == "multiple of 16" else a
    with pytest.raises(error, match=match):
        kernel(*make(a, b, c))


def test_host_tensors_still_take_the_general_path():
    kernel = _add(6, 32)
    a, b, c = _tensors(6, 32)
    kernel(a, b, c)
    x, y, z = (t.cpu() for t in _tensors(6, 32))
    kernel(x, y, z)
    torch.testing.assert_close(z, x + y)


def test_called_with_its_inputs_alone_it_returns_outputs_of_their_kind():
    kernel = _add(6, 32)
    a, b, _ = _tensors(6, 32)
    c = kernel(a, b)
    assert isinstance(c, torch.Tensor) and c.device == a.device and c.dtype == a.dtype
    torch.testing.assert_close(c, a + b)
    x, y = (t.cpu().numpy() for t in (a, b))
    z = kernel(x, y)
    assert type(z).__name__ == "ndarray"
    torch.testing.assert_close(torch.from_numpy(z), torch.from_numpy(x + y))


def test_an_explicit_stream_is_used_by_both_paths():
    kernel = _add(6, 32)
    stream = torch.cuda.Stream()
    a, b, c = _tensors(6, 32)
    kernel(a, b, c, stream=stream)  # the general path (a first call), on that stream
    with torch.cuda.stream(stream):
        first = c * 1
    a2, b2, c2 = _tensors(6, 32)
    kernel(a2, b2, c2, stream=stream.cuda_stream)  # the usual call, a raw handle
    with torch.cuda.stream(stream):
        second = c2 * 1
    stream.synchronize()
    torch.testing.assert_close(first, a + b)
    torch.testing.assert_close(second, a2 + b2)
    with pytest.raises(TypeError, match="stream= takes a CUDA stream"):
        kernel(a, b, c, stream="fast")


def test_cupy_arrays_run_on_cupys_current_stream():
    cupy = pytest.importorskip("cupy")
    kernel = _add(6, 32)
    stream = cupy.cuda.Stream(non_blocking=True)
    for _ in range(2):  # the general path, then the usual call
        with stream:
            a, b = (cupy.random.rand(6, 32, dtype=cupy.float32) for _ in range(2))
            c = cupy.full((6, 32), cupy.nan, cupy.float32)
            kernel(a, b, c)
            doubled = c * 2  # queued after the kernel on cupy's current stream
        stream.synchronize()
        cupy.testing.assert_allclose(doubled, (a + b) * 2)
    assert kernel._usual is not None


def test_sl_device_arrays_take_the_usual_call_and_wait():
    kernel = _add(6, 32)
    a, b, c = (sl.array(t.cpu().numpy()) for t in _tensors(6, 32))
    kernel(a, b, c)  # the general path sets the usual one up
    assert kernel._usual is not None
    x, y = (sl.array(t.cpu().numpy()) for t in _tensors(6, 32)[:2])
    z = sl.empty((6, 32), "float32")
    kernel(x, y, z)  # the legacy stream, waited for: the result is there
    torch.testing.assert_close(torch.from_numpy(z.numpy()), torch.from_numpy(x.numpy() + y.numpy()))


def test_tensors_that_require_grad_on_both_paths():
    kernel = _add(6, 32)
    a, b, c = _tensors(6, 32)
    a.requires_grad_(True)
    kernel(a, b, c)  # read detached, by the general path, then the usual one
    kernel(a, b, c)
    torch.testing.assert_close(c, (a + b).detach())
    c.requires_grad_(True)
    for _ in range(2):  # the usual call leaves it to the general path, which refuses it
        with pytest.raises(ValueError, match="'C' is an output that requires grad"):
            kernel(a, b, c)
    with torch.no_grad():
        c.fill_(float("nan"))
        kernel(a.detach() * 2, b, c)
    torch.testing.assert_close(c.detach(), (a * 2 + b).detach())


def test_bfloat16_tensors_of_a_bfloat16_kernel():
    kernel = _add(6, 32, dtype="bfloat16")
    a, b, c = _tensors(6, 32, torch.bfloat16)
    kernel(a, b, c)
    torch.testing.assert_close(c, a + b)
    host = kernel(a.cpu(), b.cpu())  # host tensors copied in and out
    assert host.dtype == torch.bfloat16 and host.device.type == "cpu"
    torch.testing.assert_close(host, (a + b).cpu())
    with pytest.raises(TypeError, match=r"got bfloat16: convert it with .to\(torch.float32\)"):
        _add(6, 32)(a, b.float(), c.float())


def _row_sums_across_blocks(n):
    """Row sums of A (m x n) whose columns are cut into 4 slices, each summed by blocks of its
    own into a temporary (`rfactor`), the slices then added by a second kernel."""
    m = sl.var("m")
    a = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((m,), lambda i: sl.sum(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b.op)
    ko, _ = s[b].split(k, nparts=4)
    partial = s.rfactor(b, ko)
    sliced, rows = s[partial].op.axis
    outer, inner = s[partial].split(rows, factor=32)
    s[partial].bind(sliced, sl.thread_axis("blockIdx.y"))
    s[partial].bind(outer, sl.thread_axis("blockIdx.x"))
    s[partial].bind(inner, sl.thread_axis("threadIdx.x"))
    outer, inner = s[b].split(b.op.axis[0], factor=32)
    s[b].bind(outer, sl.thread_axis("blockIdx.x"))
    s[b].bind(inner, sl.thread_axis("threadIdx.x"))
    return sl.build(s, [a, b], target="cuda")


def test_a_kernel_with_temporaries_keeps_one_set_per_shape_and_stream():
    """The partial sums live in a temporary: the usual call keeps it (no allocation and no
    wait per call), one per shape and stream, and two streams' calls in flight at once each
    write their own."""
    kernel = _row_sums_across_blocks(203)
    a = torch.randn(70, 203, device="cuda")
    out = torch.full((70,), float("nan"), device="cuda")
    kernel(a, out)  # the general path, which sets the usual call up
    torch.testing.assert_close(out, a.sum(1), rtol=1e-5, atol=1e-4)
    assert kernel._usual is not None and not kernel._usual.temps
    streams = [torch.cuda.Stream() for _ in range(2)]
    inputs = [torch.randn(m, 203, device="cuda") for m in (70, 45)]
    outputs = [torch.full((m,), float("nan"), device="cuda") for m in (70, 45)]
    for _ in range(3):
        for stream, x, y in zip(streams, inputs, outputs):
            with torch.cuda.stream(stream):
                kernel(x, y)
    torch.cuda.synchronize()
    for x, y in zip(inputs, outputs):
        torch.testing.assert_close(y, x.sum(1), rtol=1e-5, atol=1e-4)
    held = kernel._usual.temps
    assert sorted((values, stream) for values, stream in held) == sorted(
        ((m,), s.cuda_stream) for m, s in zip((70, 45), streams)
    )
    first = {key: pointers for key, (_, pointers) in held.items()}
    with torch.cuda.stream(streams[0]):
        kernel(inputs[0], outputs[0])
    assert {key: pointers for key, (_, pointers) in held.items()} == first
