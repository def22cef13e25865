"""GPU schedules built for opencl and run on an OpenCL device (pocl on the CPU in CI): the
CUDA tests' schedules, with blocks, threads, shared memory, barriers and block collectives,
compared with the reference at sizes that do not divide their tiles."""

from __future__ import annotations

import numpy as np
import pytest

import schedlang as sl
from tests.cuda import kernels
from tests.schedule.test_gpu_schedules import bind

from .util import check_opencl, needs_device

pytestmark = needs_device


def test_an_elementwise_kernel_at_symbolic_sizes_guards_its_last_block():
    s, inputs, outputs = kernels.vector_add()
    kernel = check_opencl(s, inputs, outputs, {"n": 1001})
    for n in (1, 64, 130):  # the same program at other sizes
        check_opencl(s, inputs, outputs, {"n": n}, kernel=kernel)


def test_a_tiled_gemm_stages_tiles_in_local_memory_between_barriers():
    s, inputs, outputs = kernels.gemm_shared()
    kernel = check_opencl(s, inputs, outputs, {"m": 21, "n": 19})
    assert "__local float A_shared[32];" in kernel.source
    assert kernel.source.count("barrier(CLK_LOCAL_MEM_FENCE);") == 2
    assert "get_local_id(1)" in kernel.source and "get_group_id(1)" in kernel.source


def test_a_transpose_through_a_shared_tile():
    s, inputs, outputs = kernels.transpose(13, 6)
    check_opencl(s, inputs, outputs)


def test_a_producer_at_the_root_is_a_kernel_of_its_own_with_a_global_temporary():
    s, inputs, outputs = kernels.two_kernels()
    kernel = check_opencl(s, inputs, outputs, {"n": 77})
    assert "main_kernel0" in kernel.source and "main_kernel1" in kernel.source


@pytest.mark.parametrize(
    ("schedule", "args", "form"),
    [
        (kernels.row_reduce, (9, 100, 24, 4), "x_member"),  # rows of 24 threads: a fold
        (kernels.row_reduce, (4, 19, 4, 2, "absmax"), ">>= 1)"),  # 4 threads: a tree
        (kernels.row_reduce, (3, 300, 64, 1, "max"), ">>= 1)"),
        (kernels.column_reduce, (5, None), "y_member"),  # groups strided in the block
    ],
)
def test_a_reduce_axis_bound_to_threads_combines_through_local_memory(schedule, args, form):
    """Groups of a power of two consecutive work-items combine as a tree, others fold."""
    s, inputs, outputs = schedule(*args)
    kernel = check_opencl(s, inputs, outputs, {"n": 41})
    assert "__local float red_buf[" in kernel.source and form in kernel.source


def test_math_functions_call_opencl_builtins():
    """One program, a kernel per function (each a stage of its own at the root)."""
    n = 97
    a = sl.placeholder((n,), name="A")
    positive = sl.placeholder((n,), name="P")
    functions = [*kernels.UNARY, "pow", "fma"]
    outputs = []
    for name in functions:
        x = positive if name in ("log", "log2", "sqrt", "rsqrt", "pow") else a
        outputs.append(sl.compute((n,), _math_body(name, x), name=name.upper()))
    s = sl.create_schedule(outputs)
    for c in outputs:
        xo, xi = s[c].split(c.op.axis[0], factor=32)
        bind(s, c, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    positive_values = np.random.default_rng(3).uniform(0.1, 4.0, n).astype("float32")
    kernel = check_opencl(s, [a, positive], outputs, given={positive: positive_values})
    for builtin in ("exp(", "erf(", "tanh(", "rint(", "fabs(", "pow(", "fma(", "sl_sigmoid_float("):
        assert builtin in kernel.source


def _math_body(name, x):
    if name == "pow":
        return lambda i: sl.pow(x[i], sl.const(1.5))
    if name == "fma":
        return lambda i: sl.fma(x[i], x[i], x[i])
    return lambda i: getattr(sl, name)(x[i])


def _pairs(dtype, n, a, b):
    k = sl.reduce_axis((0, n), name="k")
    elementwise = sl.compute((n,), lambda i: a[i] * b[i] + a[i] / b[i], name=f"E_{dtype}")
    total = sl.compute((1,), lambda i: sl.sum(a[k] * b[k], axis=k), name=f"S_{dtype}")
    return [elementwise, total]


def test_integer_floor_division_and_modulo_follow_the_reference_on_negative_values():
    n = 64
    a = sl.placeholder((n,), "int32", name="A")
    b = sl.placeholder((n,), "int32", name="B")
    x = sl.placeholder((n,), name="X")
    y = sl.placeholder((n,), name="Y")
    outputs = [
        sl.compute((n,), lambda i: a[i] // b[i], name="Q"),
        sl.compute((n,), lambda i: a[i] % b[i], name="R"),
        sl.compute((n,), lambda i: a[i] // 3 + (a[i] % 7), name="C"),
        sl.compute((n,), lambda i: (i - 30) // 4 * 100 + (i - 30) % 4, name="I"),
        sl.compute((n,), lambda i: x[i] // y[i], name="FQ"),
        sl.compute((n,), lambda i: x[i] % y[i], name="FR"),
    ]
    s = sl.create_schedule(outputs)
    for c in outputs:
        xo, xi = s[c].split(c.op.axis[0], factor=16)
        bind(s, c, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    gen = np.random.default_rng(9)
    ints = gen.integers(-50, 50, n).astype("int32")
    ints[:4] = [-(2**31), -(2**31), 7, -7]
    divisors = gen.integers(-9, 10, n).astype("int32")
    divisors[:4] = [-1, 0, 0, -1]  # numpy's x // -1 wraps, x // 0 and x % 0 are 0
    floats = (gen.uniform(-8, 8, n)).astype("float32")
    steps = gen.choice([-2.5, -1.0, 0.75, 3.0], n).astype("float32")
    given = {a: ints, b: divisors, x: floats, y: steps}
    kernel = check_opencl(s, [a, b, x, y], outputs, given=given, exact=True)
    assert "sl_floordiv_int(" in kernel.source and "sl_floormod_float(" in kernel.source


def test_float16_and_bfloat16_round_after_each_operation_as_the_reference_does():
    n = 45
    outputs = []
    inputs = []
    for dtype in ("float16", "bfloat16"):
        a = sl.placeholder((n,), dtype, name=f"A_{dtype}")
        b = sl.placeholder((n,), dtype, name=f"B_{dtype}")
        inputs += [a, b]
        outputs += _pairs(dtype, n, a, b)
    s = sl.create_schedule(outputs)
    for c in outputs:
        xo, xi = s[c].split(c.op.axis[0], factor=16)
        bind(s, c, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    kernel = check_opencl(s, inputs, outputs, exact=True)
    assert "vload_half(" in kernel.source and "sl_round_bf16(" in kernel.source


def test_casts_saturate_and_booleans_are_bytes():
    n = 40
    x = sl.placeholder((n,), name="X")
    outputs = [
        sl.compute((n,), lambda i: (x[i] * 100.0).astype("int8"), name="I8"),
        sl.compute((n,), lambda i: x[i].astype("float64") * 3.0, name="F64"),
        sl.compute((n,), lambda i: x[i] > 0.0, name="POS"),
    ]
    s = sl.create_schedule(outputs)
    for c in outputs:
        xo, xi = s[c].split(c.op.axis[0], factor=8)
        bind(s, c, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    values = np.random.default_rng(4).uniform(-3, 3, n).astype("float32")
    values[:2] = [np.nan, np.inf]
    kernel = check_opencl(s, [x], outputs, given={x: values}, exact=True)
    assert kernel.source.startswith("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")


def test_a_call_checks_its_arrays_and_with_inputs_alone_returns_the_outputs():
    s, inputs, outputs = kernels.vector_add(n=50)
    kernel = sl.build(s, inputs + outputs, target="opencl")
    a = np.random.default_rng(1).uniform(size=50).astype("float32")
    np.testing.assert_allclose(kernel(a, a), 2 * a)
    with pytest.raises(TypeError, match="argument 'B' .*float32"):
        kernel(a, a.astype("float64"), np.empty(50, "float32"))
    with pytest.raises(ValueError, match="'A'"):
        kernel(a[:49], a[:49], np.empty(49, "float32"))


def test_a_saved_kernel_loads_and_runs_without_its_schedule(tmp_path):
    s, inputs, outputs = kernels.two_kernels()
    kernel = sl.build(s, inputs + outputs, target="opencl")
    kernel.export(tmp_path / "two.slk")
    loaded = sl.load(tmp_path / "two.slk")
    assert loaded.source == kernel.source and loaded.target == "opencl"
    check_opencl(s, inputs, outputs, {"n": 45}, kernel=loaded)


def test_a_scan_launches_its_update_once_per_step_with_the_step_as_a_parameter():
    m, n = sl.var("m"), sl.var("n")
    x = sl.placeholder((m, n), name="X")
    state = sl.placeholder((m, n), name="state")
    init = sl.compute((1, n), lambda _, i: x[0, i], name="init")
    update = sl.compute((m, n), lambda t, i: state[t - 1, i] * 0.5 + x[t, i], name="update")
    result = sl.scan(init, update, state)
    s = sl.create_schedule(result)
    for stage in (init, update):
        outer, inner = s[stage].split(stage.op.axis[1], factor=32)
        bind(s, stage, (outer, "blockIdx.x"), (inner, "threadIdx.x"))
    kernel = check_opencl(s, [x], [result], {"m": 7, "n": 45})
    assert "int m, int n, int t)" in kernel.source
    data = np.ones((7, 45), "float32")
    assert 0 < kernel.time(data, np.empty_like(data), repeat=2) < 10


def test_c_math_names_call_the_opencl_builtins_of_their_function():
    n = 50
    a = sl.placeholder((n,), name="A")
    outputs = [
        sl.compute((n,), lambda i: sl.call_pure_extern("float32", "__expf", a[i]), name="E"),
        sl.compute(
            (n,), lambda i: sl.call_pure_extern("float32", "fdividef", a[i], a[i] + 3.0), name="D"
        ),
        sl.compute((n,), lambda i: sl.call_pure_extern("float32", "atan2f", a[i], 1.5), name="T"),
    ]
    s = sl.create_schedule(outputs)
    for c in outputs:
        xo, xi = s[c].split(c.op.axis[0], factor=16)
        bind(s, c, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    kernel = check_opencl(s, [a], outputs)
    for call in ("native_exp(A[", "atan2(A[", " / (A[(16 * i_outer_1) + i_inner_1] + 3.0f)"):
        assert call in kernel.source


def test_a_store_predicate_on_a_thread_index_leaves_the_other_threads_elements():
    a = sl.placeholder((29,), name="A")
    c = sl.compute((29,), lambda i: a[i] + 1.0, name="C")
    s = sl.create_schedule(c)
    bx, tx = s[c].split(c.op.axis[0], factor=8)
    bind(s, c, (bx, "blockIdx.x"), (tx, "threadIdx.x"))
    s[c].set_store_predicate(sl.thread_axis("threadIdx.x").var < 3)
    kernel = sl.build(s, [a, c], target="opencl")
    x = np.random.default_rng(1).random(29, dtype=np.float32)
    out = np.full(29, np.nan, np.float32)
    kernel(x, out)
    stored = np.arange(29) % 8 < 3
    np.testing.assert_allclose(out[stored], x[stored] + 1, rtol=1e-6)
    assert np.isnan(out[~stored]).all()
