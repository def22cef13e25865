"""The TE compatibility layer (`schedlang.tvm`): TE's spellings of targets, devices, arrays,
modules, timing, saving and loading, index arithmetic and shapes, each mapped onto schedlang
and checked against numpy on random data; what schedlang lacks is refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang.tvm as tvm
import schedlang.tvm.testing  # noqa: F401 - TE programs import it so; tvm.testing below
from schedlang.errors import LaunchError
from schedlang.runtime.opencl.device import opencl_available
from schedlang.tvm import te
from schedlang.tvm.contrib import cc, utils


def _scaled_sum():
    """out[i] = x[i] * 3 + y[i] over a symbolic length, split and vectorized."""
    n = te.var("n")
    x = te.placeholder((n,), name="x")
    y = te.placeholder((n,), name="y")
    out = te.compute(x.shape, lambda i: x[i] * 3.0 + y[i], name="out")
    s = te.create_schedule(out.op)
    outer, inner = s[out].split(out.op.axis[0], factor=8)
    s[out].vectorize(inner)
    return s, [x, y, out]


def _arrays(length, dev):
    rng = np.random.default_rng(length)
    x, y = (rng.uniform(-1, 1, length).astype("float32") for _ in range(2))
    out = tvm.nd.array(np.full(length, np.nan, "float32"), dev)
    return tvm.nd.array(x, dev), tvm.nd.array(y, dev), out


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=native", tvm.target.Target("llvm")])
def test_a_module_built_for_llvm_runs_on_nd_arrays(target):
    s, args = _scaled_sum()
    f = tvm.build(s, args, target, name="scaled_sum")
    dev = tvm.device(tvm.target.Target(target).kind.name, 0)
    assert dev == tvm.cpu(0) and dev.exist
    x, y, out = _arrays(37, dev)
    f(x, y, out)
    tvm.testing.assert_allclose(out.numpy(), x.numpy() * 3 + y.numpy(), rtol=1e-6, atol=1e-6)
    assert f.entry_name == "scaled_sum" and f["scaled_sum"] is f
    assert "define" in f.get_source() and f.imported_modules == []


def test_time_evaluator_reports_seconds_per_run():
    s, args = _scaled_sum()
    f = tvm.build(s, args, "llvm", name="timed")
    x, y, out = _arrays(1000, tvm.cpu(0))
    result = f.time_evaluator(f.entry_name, tvm.cpu(0), number=5, repeat=3)(x, y, out)
    assert len(result.results) == 3 and 0 < result.min <= result.mean <= result.max < 1
    with pytest.raises(AttributeError, match="no function 'other'"):
        f.time_evaluator("other", tvm.cpu(0))


def test_saved_modules_load_through_export_library_and_create_shared():
    s, args = _scaled_sum()
    f = tvm.build(s, args, "llvm", name="saved")
    temp = utils.tempdir()
    f.save(temp.relpath("saved.o"))
    cc.create_shared(temp.relpath("saved.so"), [temp.relpath("saved.o")])
    f.export_library(temp.relpath("packed.so"))
    assert temp.listdir() == ["packed.so", "saved.o", "saved.so"]
    for name in ("saved.so", "packed.so"):
        g = tvm.runtime.load_module(temp.relpath(name))
        x, y, out = _arrays(21, tvm.cpu(0))
        g(x, y, out)
        tvm.testing.assert_allclose(out.numpy(), x.numpy() * 3 + y.numpy(), rtol=1e-6, atol=1e-6)


def test_create_shared_refuses_what_needs_a_c_compiler(tmp_path):
    foreign = tmp_path / "foreign.o"
    foreign.write_bytes(b"\x7fELF not a schedlang module")
    with pytest.raises(tvm.TVMError, match="C compiler, which schedlang does not use"):
        cc.create_shared(str(tmp_path / "lib.so"), [str(foreign)])


def test_a_cuda_module_carries_its_ptx_as_the_imported_device_module(tmp_path):
    s, (x, y, out) = _scaled_sum()
    s = te.create_schedule(out.op)
    bx, tx = s[out].split(out.op.axis[0], factor=64)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis((0, 64), "threadIdx.x"))
    f = tvm.build(s, [x, y, out], tvm.target.Target("cuda -arch=sm_80", host="llvm"))
    (device_module,) = f.imported_modules
    assert ".target sm_80" in device_module.get_source()
    device_module.save(str(tmp_path / "k.ptx"))
    loaded = tvm.runtime.load_module(str(tmp_path / "k.ptx"))
    assert loaded.get_source() == device_module.get_source()
    f.import_module(loaded)  # TE's step after loading both halves; one module here


def test_targets_devices_and_arrays_spelled_as_in_te():
    assert tvm.target.Target("cuda", host="llvm").kind.name == "cuda"
    assert tvm.device("llvm -mcpu=core-avx2") == tvm.device("c") == tvm.cpu(0)
    with pytest.raises(tvm.TVMError, match="'llvm' .*, 'cuda' and 'opencl' only"):
        tvm.target.Target("vulkan")
    assert tvm.device("cuda", 0) == tvm.cuda(0) == tvm.gpu(0)
    assert tvm.cl(0).exist == opencl_available() and not tvm.device("rocm").exist
    assert tvm.testing.device_enabled("opencl") == opencl_available()
    for name in ("metal", "vulkan"):
        assert not tvm.device(name, 0).exist and not tvm.testing.device_enabled(name)
    with pytest.raises(tvm.TVMError, match="unknown device 'webgpu'"):
        tvm.device("webgpu")
    scalar = tvm.nd.array(np.random.default_rng(1).uniform(size=()).astype("float32"))
    assert scalar.shape == () and scalar.numpy().shape == ()
    with pytest.raises(tvm.TVMError, match="not available here"):
        tvm.nd.array(np.ones(3), tvm.rocm(0))
    empty = tvm.nd.empty((2, 3), "int32", tvm.cpu(0))
    assert empty.shape == (2, 3) and empty.dtype == "int32"
    filled = tvm.nd.array(np.arange(6).reshape(2, 3)).copyfrom(np.ones((2, 3)))
    assert (filled.numpy() == 1).all()


def test_shapes_of_integral_floats_are_integers_and_others_are_refused():
    m, block = 96, 32
    a = te.placeholder((m / block, block), name="a")  # TE users divide with /
    b = te.compute((m / block, block), lambda i, j: a[i, j] + 1.0, name="b")
    assert [int(e.value) for e in b.shape] == [3, 32]
    with pytest.raises(tvm.TVMError, match="the extent 2.5 is not an integer"):
        te.placeholder((5 / 2,), name="c")


def test_truncated_division_rounds_toward_zero():
    n = te.var("n")
    a = te.placeholder((n,), "int32", name="a")
    d = te.placeholder((n,), "int32", name="d")
    q = te.compute((n,), lambda i: tvm.tir.truncdiv(a[i], d[i]), name="q")
    r = te.compute((n,), lambda i: tvm.tir.truncmod(a[i], d[i]), name="r")
    s = te.create_schedule([q.op, r.op])
    f = tvm.build(s, [a, d, q, r], "llvm")
    rng = np.random.default_rng(5)
    x = rng.integers(-50, 50, 101).astype("int32")
    y = rng.choice([-7, -3, -1, 1, 2, 9], 101).astype("int32")
    qs, rs = (tvm.nd.array(np.zeros(101, "int32")) for _ in range(2))
    f(tvm.nd.array(x), tvm.nd.array(y), qs, rs)
    np.testing.assert_array_equal(qs.numpy(), np.trunc(x / y).astype("int32"))
    np.testing.assert_array_equal(rs.numpy(), np.fmod(x, y))
    floor = te.compute((n,), lambda i: tvm.tir.floordiv(a[i], d[i]), name="f")
    g = tvm.build(te.create_schedule(floor.op), [a, d, floor], "llvm")
    out = tvm.nd.array(np.zeros(101, "int32"))
    g(tvm.nd.array(x), tvm.nd.array(y), out)
    np.testing.assert_array_equal(out.numpy(), x // y)


def test_lower_prints_the_loop_nest_and_binds_are_refused():
    s, args = _scaled_sum()
    text = str(tvm.lower(s, args, simple_mode=True))
    assert "vectorized" in text and "out[" in text
    with pytest.raises(tvm.TVMError, match="binds="):
        tvm.build(s, args, "llvm", binds={args[0]: None})


def test_testing_helpers_take_nd_arrays():
    x = tvm.nd.array(np.array([1.0, 2.0], "float32"))
    tvm.testing.assert_allclose(x, np.array([1.0, 2.0]))
    with pytest.raises(AssertionError):
        tvm.testing.assert_allclose(x, np.array([1.0, 2.5]))
    assert tvm.testing.device_enabled("llvm")
    assert tvm.runtime.convert(1024) == 1024


def _on_threads(factor):
    """`_scaled_sum` on blocks of `factor` threads."""
    _, (x, y, out) = _scaled_sum()
    s = te.create_schedule(out.op)
    bx, tx = s[out].split(out.op.axis[0], factor=factor)
    s[out].bind(bx, te.thread_axis("blockIdx.x"))
    s[out].bind(tx, te.thread_axis("threadIdx.x"))
    return s, (x, y, out)


@pytest.mark.gpu
def test_a_cuda_module_runs_on_arrays_of_the_gpu():
    s, (x, y, out) = _on_threads(128)
    f = tvm.build(s, [x, y, out], "cuda", name="gpu_sum")
    dev = tvm.cuda(0)
    assert dev.exist and tvm.testing.device_enabled("cuda")
    a, b, c = _arrays(1000, dev)
    f(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() * 3 + b.numpy(), rtol=1e-6, atol=1e-6)
    seconds = f.time_evaluator(f.entry_name, dev, number=20)(a, b, c).mean
    assert 0 < seconds < 1e-2


def test_a_cuda_module_runs_in_the_simulator_without_a_gpu():
    s, (x, y, out) = _on_threads(32)
    f = tvm.build(s, [x, y, out], "cuda")
    a, b = (np.random.default_rng(k).random(45, dtype=np.float32) for k in (0, 1))
    c = np.full(45, np.nan, np.float32)
    f.simulate(a, b, c)
    np.testing.assert_allclose(c, a * 3 + b, rtol=1e-6)
    cpu = tvm.build(te.create_schedule(out.op), [x, y, out], "llvm")
    with pytest.raises(LaunchError, match="built for the CPU: call it, there is no simulator"):
        cpu.simulate(a, b, c)
    opencl = tvm.build(s, [x, y, out], "opencl")
    with pytest.raises(LaunchError, match="built for an OpenCL device: call it, there is no"):
        opencl.simulate(a, b, c)


def test_an_extern_stage_calls_a_function_registered_in_te_style():
    """``te.extern`` with ``tvm.tir.call_packed`` to a ``tvm.register_func`` function, which
    receives TE arrays and writes its output with ``copyto``."""
    kinds = []

    @tvm.register_func("test_compat.cube_plus_one", override=True)
    def cube_plus_one(x, y):
        kinds.append((type(x), type(y)))
        tvm.nd.array(x.numpy() ** 3 + 1).copyto(y)

    n = te.var("n")
    a = te.placeholder((n,), name="A")
    buffers = []

    def call(ins, outs):  # TE passes a buffer, or its data pointer: both are the array
        buffers.extend(ins + outs)
        return tvm.tir.call_packed("test_compat.cube_plus_one", ins[0].data, outs[0])

    c = te.extern(a.shape, [a], call, name="C")
    assert all(isinstance(b, tvm.te.schedule.Buffer) for b in buffers) and len(buffers) == 2
    assert not isinstance(a, tvm.te.schedule.Buffer)
    d = te.compute(a.shape, lambda i: c[i] - a[i], name="D")
    f = tvm.build(te.create_schedule(d.op), [a, d], "llvm")
    x = np.random.default_rng(3).uniform(-2, 2, 37).astype("float32")
    out = tvm.nd.array(np.full(37, np.nan, "float32"))
    f(tvm.nd.array(x), out)
    tvm.testing.assert_allclose(out.numpy(), x**3 + 1 - x, rtol=1e-5)
    assert kinds == [(tvm.nd.NDArray, tvm.nd.NDArray)]
    assert tvm.get_global_func("test_compat.cube_plus_one") is not None


def test_cblas_products_are_extern_stages_over_numpys_blas():
    from schedlang.tvm.contrib import cblas

    assert tvm.get_global_func("tvm.contrib.cblas.matmul", allow_missing=True)
    rng = np.random.default_rng(4)
    for transa, transb in ((False, False), (True, False), (False, True)):
        a = te.placeholder((13, 7) if transa else (7, 13), name="A")
        b = te.placeholder((9, 13) if transb else (13, 9), name="B")
        c = cblas.matmul(a, b, transa, transb)
        x = rng.uniform(-1, 1, [int(d) for d in a.shape]).astype("float32")
        y = rng.uniform(-1, 1, [int(d) for d in b.shape]).astype("float32")
        f = tvm.build(te.create_schedule(c.op), [a, b, c], "llvm")
        out = tvm.nd.array(np.full((7, 9), np.nan, "float32"))
        f(tvm.nd.array(x), tvm.nd.array(y), out)
        want = (x.T if transa else x) @ (y.T if transb else y)
        tvm.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    a = te.placeholder((3, 4, 5), name="A")
    b = te.placeholder((3, 5, 2), name="B")
    c = cblas.batch_matmul(a, b)
    x = rng.uniform(-1, 1, (3, 4, 5)).astype("float32")
    y = rng.uniform(-1, 1, (3, 5, 2)).astype("float32")
    out = tvm.nd.array(np.full((3, 4, 2), np.nan, "float32"))
    tvm.build(te.create_schedule(c.op), [a, b, c], "llvm")(tvm.nd.array(x), tvm.nd.array(y), out)
    tvm.testing.assert_allclose(out.numpy(), x @ y, rtol=1e-5)


def test_intrinsic_lowering_rules_as_te_registers_them(monkeypatch):
    """``tvm.ir.register_intrin_lowering`` on TE's names (``tir.exp``): the rule gets a
    ``tvm.tir.Call`` and returns ``call_pure_extern``; a custom ``call_intrin`` needs one."""
    from schedlang.ir import intrinsics

    monkeypatch.setattr(intrinsics, "_RULES", {})
    seen = []

    def keep(op):
        assert isinstance(op, tvm.tir.Call)
        seen.append((op.op.name, op.dtype))
        return op

    tvm.ir.register_op_attr("tir.halflog", "TCallEffectKind", tvm.tir.CallEffectKind.Pure)
    with pytest.raises(tvm.TVMError, match="only CallEffectKind.Pure"):
        tvm.ir.register_op_attr("tir.halflog", "TCallEffectKind", tvm.tir.CallEffectKind.Opaque)
    tvm.ir.register_intrin_lowering("tir.exp", target="llvm", f=keep, level=99)
    tvm.ir.register_intrin_lowering(
        "tir.halflog",
        target="llvm",
        f=lambda op: tvm.tir.call_pure_extern("float32", "logf", op.args[0]) / 2,
    )
    n = te.var("n")
    a = te.placeholder((n,), name="A")
    b = te.compute(
        a.shape, lambda i: te.exp(a[i]) + tvm.tir.call_intrin("float32", "tir.halflog", a[i])
    )
    f = tvm.build(te.create_schedule(b.op), [a, b], "llvm")
    x = np.random.default_rng(5).uniform(0.5, 3, 29).astype("float32")
    out = tvm.nd.array(np.full(29, np.nan, "float32"))
    f(tvm.nd.array(x), out)
    tvm.testing.assert_allclose(out.numpy(), np.exp(x) + np.log(x) / 2, rtol=1e-5)
    assert seen == [("tir.exp", "float32")]  # kept: LLVM's exp
    assert '@"logf"' in f.get_source()  # halflog's rule called the C library's logf
    with pytest.raises(tvm.TVMError, match="'halflog' .* no lowering rule for the opencl target"):
        tvm.build(te.create_schedule(b.op), [a, b], "opencl")  # its rule is llvm's alone
    with pytest.raises(tvm.TVMError, match="'vulkan': schedlang compiles for 'llvm'"):
        tvm.build(te.create_schedule(b.op), [a, b], "vulkan")


def test_a_multi_output_compute_and_an_argmax_over_pairs_in_te_spelling():
    m, n = te.var("m"), te.var("n")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="float32")

    def fcombine(x, y):
        better = x[1] >= y[1]
        return tvm.tir.Select(better, x[0], y[0]), tvm.tir.Select(better, x[1], y[1])

    def fidentity(t0, t1):
        return tvm.tir.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    k = te.reduce_axis((0, n), "k")
    best, value = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    assert best.op.output(1) == value and value.value_index == 1
    s = te.create_schedule(best.op)
    s[best].parallel(best.op.axis[0])
    f = tvm.build(s, [idx, val, best, value], "llvm")
    dev = tvm.cpu(0)
    rng = np.random.default_rng(3)
    v = rng.integers(-4, 5, (13, 21)).astype("float32")  # ties: the first column wins
    i = np.tile(np.arange(21, dtype="int32"), (13, 1))
    out_i = tvm.nd.array(np.full(13, -9, "int32"), dev)
    out_v = tvm.nd.array(np.full(13, np.nan, "float32"), dev)
    f(tvm.nd.array(i, dev), tvm.nd.array(v, dev), out_i, out_v)
    np.testing.assert_array_equal(out_i.numpy(), np.argmax(v, axis=1))
    np.testing.assert_array_equal(out_v.numpy(), v.max(axis=1))


def _wmma_load(scope, n=16):
    a = te.placeholder((16, n), name="A", dtype="float16")
    buffer_a = tvm.tir.decl_buffer(a.shape, a.dtype, scope="shared", offset_factor=256)
    c = te.compute((16, n), lambda i, j: a[i, j], name="C")
    buffer_c = tvm.tir.decl_buffer(c.shape, c.dtype, scope=scope, offset_factor=256)

    def body(ins, outs):
        ib = tvm.tir.ir_builder.create()
        src, dst = ins[0], outs[0]
        ib.emit(
            tvm.tir.call_intrin(
                "handle", "tir.tvm_load_matrix_sync", dst.data, 16, n, 16,
                dst.elem_offset // 256, src.access_ptr("r"), n, "row_major",
            )
        )  # fmt: skip
        return ib.get()

    return te.decl_tensor_intrin(c.op, body, binds={a: buffer_a, c: buffer_c})


def _wmma_gemm(depth=16):
    a = te.placeholder((16, depth), name="A", dtype="float16")
    b = te.placeholder((depth, 16), name="B", dtype="float16")
    k = te.reduce_axis((0, depth), name="k")
    c = te.compute(
        (16, 16),
        lambda i, j: te.sum(a[i, k].astype("float") * b[k, j].astype("float"), axis=k),
        name="C",
    )
    scopes = {a: "wmma.matrix_a", b: "wmma.matrix_b", c: "wmma.accumulator"}
    binds = {t: tvm.tir.decl_buffer(t.shape, t.dtype, scope=v) for t, v in scopes.items()}

    def body(ins, outs):
        fa, fb = ins
        (fc,) = outs

        def update():
            ib = tvm.tir.ir_builder.create()
            ib.emit(
                tvm.tir.call_intrin(
                    "handle", "tir.tvm_mma_sync", fc.data, 0, fa.data, 0, fb.data, 0, fc.data, 0
                )
            )
            return ib.get()

        reset = tvm.tir.ir_builder.create()
        reset.emit(
            tvm.tir.call_intrin("handle", "tir.tvm_fill_fragment", fc.data, 16, 16, 16, 0, 0.0)
        )
        return update(), reset.get(), update()

    return te.decl_tensor_intrin(c.op, body, binds=binds)


def _wmma_store():
    a = te.placeholder((16, 16), name="A", dtype="float32")
    c = te.compute((16, 16), lambda i, j: a[i, j], name="C")
    binds = {a: tvm.tir.decl_buffer(a.shape, a.dtype, scope="wmma.accumulator")}

    def body(ins, outs):
        ib = tvm.tir.ir_builder.create()
        ib.emit(
            tvm.tir.call_intrin(
                "handle", "tir.tvm_store_matrix_sync", ins[0].data, 16, 16, 16, 0,
                outs[0].access_ptr("w"), 16, "row_major",
            )
        )  # fmt: skip
        return ib.get()

    return te.decl_tensor_intrin(c.op, body, binds=binds)


def test_te_declared_warp_matrix_intrinsics_are_the_shipped_ones():
    """TE declares each tensor-core operation as a compute whose body calls a warp-matrix
    builtin; the layer reads which one and gives schedlang's, which tensorize proves."""
    import schedlang as sl

    assert _wmma_load("wmma.matrix_a") == sl.intrin.load_matrix("wmma.matrix_a")
    assert _wmma_load("wmma.matrix_b") == sl.intrin.load_matrix("wmma.matrix_b")
    assert _wmma_load("wmma.matrix_b", n=8) == sl.intrin.load_matrix("wmma.matrix_b", n=8)
    assert _wmma_gemm() == sl.intrin.mma_sync()
    assert _wmma_store() == sl.intrin.store_matrix()
    with pytest.raises(tvm.TVMError, match="tvm_mma_sync reduces over 16, but the compute"):
        _wmma_gemm(depth=8)


def test_an_intrinsic_calling_c_functions_in_te_spelling():
    """TE's gemv intrinsic: an ir_builder body calling a C function through call_extern, with
    the function's LLVM IR imported by pragma; the output is poisoned, the body computes it
    whole."""
    import shutil
    from pathlib import Path

    from schedlang.tvm.contrib import clang
    from schedlang.tvm.topi.utils import get_const_tuple

    ir = (Path(__file__).parents[1] / "schedule" / "data" / "gemv.ll").read_text()
    n, m, l = 8, 32, 16  # noqa: E741
    a = te.placeholder((n, l), name="A")
    b = te.placeholder((m, l), name="B")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((n, m), lambda i, j: te.sum(a[i, k] * b[j, k], axis=k), name="C")
    va = te.placeholder((l,), name="a")
    vb = te.placeholder((16, l), name="b")
    kk = te.reduce_axis((0, l), name="k")
    vc = te.compute((16,), lambda i: te.sum(va[kk] * vb[i, kk], axis=kk), name="c")
    binds = {
        va: tvm.tir.decl_buffer(va.shape, va.dtype, name="A", offset_factor=1, strides=[1]),
        vb: tvm.tir.decl_buffer(vb.shape, vb.dtype, name="B", strides=[te.var("s1"), 1]),
        vc: tvm.tir.decl_buffer(vc.shape, vc.dtype, name="C", offset_factor=1, strides=[1]),
    }

    def body(ins, outs):
        ib = tvm.tir.ir_builder.create()
        aa, bb = ins
        ib.emit(
            tvm.tir.call_extern(
                "int32", "gemv_set", outs[0].access_ptr("w"), aa.access_ptr("r"),
                bb.access_ptr("r"), 16, l, bb.strides[0],
            )
        )  # fmt: skip
        return ib.get()

    gemv = te.decl_tensor_intrin(vc.op, body, binds=binds)
    s = te.create_schedule(c.op)
    x, y = c.op.axis
    yo, yi = s[c].split(y, factor=16)
    s[c].reorder(x, yo, yi, s[c].op.reduce_axis[0])
    s[c].tensorize(yi, gemv)
    s[c].pragma(x, "import_llvm", ir)
    f = tvm.build(s, [a, b, c], target="llvm")
    rng = np.random.default_rng(8)
    x_np = rng.uniform(size=get_const_tuple(a.shape)).astype("float32")
    y_np = rng.uniform(size=get_const_tuple(b.shape)).astype("float32")
    out = tvm.nd.array(np.full((n, m), np.nan, "float32"), tvm.cpu(0))
    f(tvm.nd.array(x_np, tvm.cpu(0)), tvm.nd.array(y_np, tvm.cpu(0)), out)
    tvm.testing.assert_allclose(out.numpy(), x_np @ y_np.T, rtol=1e-5)
    if shutil.which("clang") is None:
        with pytest.raises(tvm.TVMError, match="create_llvm needs a C compiler, 'clang'"):
            clang.create_llvm("int f(void) { return 0; }")


def test_pass_context_options_and_the_tensor_core_query():
    from schedlang.tvm.contrib import nvcc

    with tvm.transform.PassContext(config={"tir.UnrollLoop": {"auto_max_step": 16}}) as ctx:
        assert ctx.config["tir.UnrollLoop"] == {"auto_max_step": 16}
    with pytest.raises(tvm.TVMError, match="'tir.disable_vectorize' has no counterpart"):
        tvm.transform.PassContext(config={"tir.disable_vectorize": True})
    assert nvcc.have_tensorcore("9.0") and nvcc.have_tensorcore("8.6")
    assert not nvcc.have_tensorcore("7.5")
    assert nvcc.have_tensorcore(target="cuda -arch=sm_90")
    assert not nvcc.have_tensorcore(target=tvm.target.Target("cuda -arch=sm_75"))
    gpu = tvm.cuda(0)
    assert nvcc.have_tensorcore() == (gpu.exist and float(gpu.compute_version) >= 8)
    assert tvm.cpu(0).compute_version is None
    if not tvm.cuda(0).exist:
        assert tvm.cuda(0).compute_version is None


def test_an_inlined_tensor_listed_in_te_args_is_passed_and_left_alone():
    """TE lets a tensor that is inlined be listed in args: its buffer is passed and nothing
    writes it. The module takes the array at its place and leaves it as it was."""
    m = te.var("m")
    a = te.placeholder((m,), name="A")
    b = te.compute((m,), lambda i: a[i] + 1, name="B")
    c = te.compute((m,), lambda i: b[i] * 2, name="C")
    s = te.create_schedule(c.op)
    s[b].compute_inline()
    assert "def main(A: float32[m], C: float32[m])" in str(tvm.lower(s, [a, b, c]))
    f = tvm.build(s, [a, b, c], "llvm")
    x = np.arange(5, dtype="float32")
    untouched = np.full(5, -3.0, "float32")
    out = tvm.nd.array(np.full(5, np.nan, "float32"))
    kept = tvm.nd.array(untouched)
    f(tvm.nd.array(x), kept, out)
    np.testing.assert_array_equal(out.numpy(), (x + 1) * 2)
    np.testing.assert_array_equal(kept.numpy(), untouched)
    with pytest.raises(tvm.TVMError, match="inlined tensor or a size variable in its arguments"):
        f.export_library("unused.so")


def test_size_variables_in_args_are_passed_among_the_arrays():
    """TE lists a size variable in args and passes its value at that position."""
    s, (x, y, out) = _scaled_sum()
    n = x.shape[0]
    assert "def main(x: float32[n], y: float32[n], out: float32[n])" in str(
        tvm.lower(s, [x, y, out, n])
    )
    f = tvm.build(s, [x, n, y, out], "llvm")
    dev = tvm.cpu(0)
    xs, ys, result = _arrays(37, dev)
    f(xs, 37, ys, result)
    np.testing.assert_allclose(result.numpy(), xs.numpy() * 3 + ys.numpy(), rtol=1e-5, atol=1e-6)
    f.time_evaluator(f.entry_name, dev, number=2)(xs, 37, ys, result)
    with pytest.raises(ValueError, match=r"size 'n' is 36 .* but 37 from dimension 0 of 'x'"):
        f(xs, 36, ys, result)
