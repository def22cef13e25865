"""The `topi_mirror` operators on CUDA: each built with the compute and schedule that TVM
v0.14's CUDA strategy (``python/tvm/relay/op/strategy/cuda.py``) picks, inside
``with tvm.target.Target("cuda")``. Where a GPU is usable each runs on it; elsewhere its PTX is
assembled by ptxas for sm_90a and the kernel runs in schedlang's CUDA simulator (the loop-IR
interpreter, per thread), and either is compared with numpy."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from schedlang.platform_info import cuda_available

from .topi_check import poisoned
from .topi_mirror_operators import Operators, compared, reason


def _routes(topi) -> dict:
    """Operator name -> a function of its placeholders giving (outputs, schedule), as TVM's
    CUDA strategy picks them. Where the strategy has none for CUDA, TVM falls back to its
    generic strategy, and so does this."""
    cuda, gpu, nn = topi.cuda, topi.gpu, topi.nn

    def injective(make):
        return lambda *t: (make(*t), cuda.schedule_injective)

    def reduce(make):
        return lambda A: (make(A), cuda.schedule_reduce)

    def pool(kind):
        args = ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), kind, False, "NCHW", False)
        return lambda D: (nn.pool2d(D, *args), lambda outs: cuda.schedule_pool(outs, "NCHW"))

    return {
        "exp": injective(topi.exp),
        "relu": injective(nn.relu),
        "add": injective(topi.add),
        "broadcast_to": injective(lambda A: topi.broadcast_to(A, (3, 5, 7))),
        "sum": reduce(lambda A: topi.sum(A, axis=(0, 2))),
        "max": reduce(lambda A: topi.max(A, axis=-1, keepdims=True)),
        "argmax": reduce(lambda A: topi.argmax(A, axis=1)),
        "softmax": lambda A: (nn.softmax(A, axis=1), cuda.schedule_softmax),
        "log_softmax": lambda A: (nn.log_softmax(A, axis=1), cuda.schedule_softmax),
        "dense": lambda X, W, B: (gpu.dense_small_batch(X, W, B), gpu.schedule_dense_small_batch),
        # no CUDA strategy: TVM's generic one, whose schedule is the generic schedule_dense
        "dense_pack": lambda X, W: (nn.dense_pack(X, W), topi.generic.schedule_dense),
        # by position, as Relay's strategy passes a template's arguments
        "matmul": lambda A, B: (
            gpu.matmul_default(A, B, None, None, True, False),
            gpu.schedule_matmul_default,
        ),
        "batch_matmul": lambda X, Y: (cuda.batch_matmul(X, Y), cuda.schedule_batch_matmul),
        "conv2d_nchw": lambda D, W: (
            cuda.conv2d_nchw(D, W, (2, 2), (1, 1), (1, 1), "float32"),
            cuda.schedule_conv2d_nchw,
        ),
        "depthwise_conv2d_nchw": lambda D, W: (
            cuda.depthwise_conv2d_nchw(D, W, (1, 1), (1, 1), (1, 1), "float32"),
            cuda.schedule_depthwise_conv2d_nchw,
        ),
        "conv2d_transpose_nchw": lambda D, W: (
            cuda.conv2d_transpose_nchw(D, W, (2, 2), (1, 1), "float32", (1, 0)),
            cuda.schedule_conv2d_transpose_nchw,
        ),
        "max_pool2d": pool("max"),
        "avg_pool2d": pool("avg"),
        "global_avg_pool": lambda D: (
            nn.global_pool(D, "avg"),
            lambda outs: cuda.schedule_adaptive_pool(outs, "NCHW"),
        ),
        "layout_transform": injective(lambda A: topi.layout_transform(A, "NCHW", "NCHW4c")),
        "concatenate": injective(lambda A, B: topi.concatenate([A, B], 1)),
        "split": injective(lambda A: topi.split(A, 3, axis=1)),
        "transpose": injective(lambda A: topi.transpose(A, (2, 0, 1))),
        "take": injective(lambda A, ind: topi.take(A, ind, axis=1)),
        "gather": injective(lambda A, G: topi.gather(A, 2, G)),
        "resize2d": injective(lambda D: topi.image.resize2d(D, (0.0, 0.0, 0.0, 0.0), (8, 4))),
        "pad": injective(lambda A: nn.pad(A, (1, 0, 2), (0, 2, 1), 0.5)),
        "lrn": lambda L: (nn.lrn(L, 3, 1, 0.001, 0.75, 2.0), cuda.schedule_lrn),
        # TOPI has no CUDA schedule of layer_norm (TVM's own test of it runs on llvm only):
        # the CUDA injective schedule, as for an operator Relay registers as injective
        "layer_norm": injective(lambda L, G, B: nn.layer_norm(L, G, B, (2, 3))),
    }


def cuda_mode(simulate: bool = False) -> str:
    """How the CUDA route is checked here: on the GPU, or assembled and simulated (where
    there is no GPU, or when asked to)."""
    return "gpu" if cuda_available() and not simulate else "ptxas+simulator"


def measure_cuda(tvm, operators: Operators, name: str, simulate: bool = False) -> str:
    """The word "match" if TOPI's CUDA route for `name` matches numpy (on the GPU, or in the
    simulator after ptxas accepted its PTX: see `cuda_mode`), else why not."""
    try:
        inputs, arrays, _, expected = getattr(operators, name)()
        with tvm.target.Target("cuda"):
            outs, schedule = _routes(operators.topi)[name](*inputs)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            s = schedule(outs)
            module = tvm.build(s, list(inputs) + outs, "cuda")
        results = [poisoned(o) for o in outs]
        if cuda_mode(simulate) == "gpu":
            module(*arrays, *results)
        else:
            _assemble(module.kernel.ptx)
            module.simulate(*arrays, *results)
        return compared(results, expected)
    except Exception as error:  # noqa: BLE001 - the reason is the measurement's result
        return reason(error)


def _assemble(ptx: str) -> None:
    """ptxas's check of `ptx` for sm_90a (the H200's architecture); RuntimeError with its
    messages when it refuses, or when ptxas is not installed."""
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        raise RuntimeError("ptxas is not on PATH: the PTX cannot be checked without a GPU")
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        done = subprocess.run(
            [ptxas, "-arch=sm_90a", str(source), "-o", str(Path(folder) / "kernel.cubin")],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(f"ptxas refused the PTX: {done.stderr.strip()}")
