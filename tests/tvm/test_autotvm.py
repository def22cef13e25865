"""AutoTVM's tuning API through the TE layer: templates that ask ``get_config()``, tasks,
tuners, the log callback, ``apply_history_best`` and the ``autotvm`` logger, as TVM's
"Optimizing Operators with Schedule Templates and AutoTVM" tutorial uses them."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

import schedlang as sl
import schedlang.tvm as tvm
import schedlang.tvm.testing  # noqa: F401 (tvm.testing, as the tutorial imports it)
from schedlang.tvm import autotvm, te


@autotvm.template("tests/matmul")
def matmul(N, L, M, dtype):  # noqa: N803 (the tutorial's names)
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_knob("tile_x", [1, 4, 8])
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = s[C].split(x, cfg["tile_x"].val)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


def _data(n, l, m):
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, l)).astype(np.float32)
    b = rng.uniform(-1, 1, (l, m)).astype(np.float32)
    return a, b


def test_a_task_has_the_space_its_template_defines():
    task = autotvm.task.create("tests/matmul", args=(12, 7, 9, "float32"), target="llvm")
    space = task.config_space
    assert len(space) == 6 * 3  # the divisors of 12, and three tile widths
    assert "tile_y: Split(policy=factors, extent=12, parts=2) len=6" in str(space)
    assert [list(c) for c in space.knobs["tile_y"].choices][:3] == [[-1, 1], [-1, 2], [-1, 3]]


def test_tuning_logs_each_trial_and_apply_history_best_builds_the_best(tmp_path, caplog):
    task = autotvm.task.create("tests/matmul", args=(12, 7, 9, "float32"), target="llvm")
    option = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(number=2))
    tuner = autotvm.tuner.RandomTuner(task)
    path = tmp_path / "matmul.log"
    with caplog.at_level(logging.DEBUG, logger="autotvm"):
        tuner.tune(n_trial=5, measure_option=option,
                   callbacks=[autotvm.callback.log_to_file(str(path))])  # fmt: skip
    said = [r.getMessage() for r in caplog.records if r.name == "autotvm"]
    assert len(said) == 5 and said[0].startswith("No: 1\tGFLOPS: ")
    assert len(path.read_text().splitlines()) == 5
    assert tuner.best_config is not None
    with autotvm.apply_history_best(str(path)):
        with tvm.target.Target("llvm"):
            s, args = matmul(12, 7, 9, "float32")
            func = tvm.build(s, args)
    assert str(s) == str(task.task.instantiate(tuner.best_config)[0])
    a, b = _data(12, 7, 9)
    c = tvm.nd.empty((12, 9))
    func(tvm.nd.array(a), tvm.nd.array(b), c)
    tvm.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-5)


def test_the_grid_tuner_walks_the_space_in_order(tmp_path):
    task = autotvm.task.create("tests/matmul", args=(4, 3, 5, "float32"), target="llvm")
    log = autotvm.tuner.GridSearchTuner(task).tune(n_trial=4)
    assert sorted(t.number for t in log) == [0, 1, 2, 3]  # the first four, built in parallel


def test_outside_a_history_a_template_falls_back_to_the_first_choices(tmp_path, caplog):
    s, _ = matmul(8, 3, 4, "float32")
    assert str(s).count("factor=1)") == 2  # each knob at its first choice: sizes 1
    empty = tmp_path / "empty.log"
    empty.write_text("")
    with caplog.at_level(logging.WARNING, logger="autotvm"):
        with autotvm.apply_history_best(str(empty)):
            matmul(8, 3, 4, "float32")
    assert "Cannot find config for template tests/matmul" in caplog.text


def test_reorder_and_annotate_knobs_apply_in_a_template(tmp_path):
    @autotvm.template("tests/scale")
    def scale(n):
        A = te.placeholder((n, n), name="A")
        B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
        s = te.create_schedule(B.op)
        i, j = s[B].op.axis
        cfg = autotvm.get_config()
        cfg.define_reorder("order", [i, j], policy="all")
        cfg.define_annotate("ann", [j], policy="try_unroll")
        order = cfg["order"].apply(s, B, [i, j])
        cfg["ann"].apply(s, B, [j])
        assert set(order) == {i, j}
        return s, [A, B]

    task = autotvm.task.create("tests/scale", args=(6,), target="llvm")
    assert len(task.config_space) == 4
    log = autotvm.tuner.GridSearchTuner(task).tune(n_trial=4)
    assert log.counts()["ok"] == 4


def test_an_unknown_template_is_refused():
    with pytest.raises(tvm.TVMError, match="no template is registered as 'nowhere'"):
        autotvm.task.create("nowhere", args=(), target="llvm")


def test_a_target_block_sets_the_target_of_build():
    A = te.placeholder((5,), name="A")
    B = te.compute((5,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    assert tvm.target.Target.current() is None
    with tvm.target.Target("llvm") as target:
        assert tvm.target.Target.current() is target
        func = tvm.build(s, [A, B])
    assert tvm.target.Target.current() is None
    b = tvm.nd.empty((5,))
    func(tvm.nd.array(np.arange(5, dtype=np.float32)), b)
    np.testing.assert_array_equal(b.numpy(), np.arange(5) + 1.0)


def test_topi_conv2d_nchw_matches_its_numpy_reference():
    from schedlang.tvm import topi
    from schedlang.tvm.topi.testing import conv2d_nchw_python

    data = te.placeholder((2, 3, 9, 8), name="data")
    kernel = te.placeholder((5, 3, 3, 3), name="kernel")
    conv = topi.nn.conv2d_nchw(data, kernel, (2, 1), (1, 1), dilation=1, out_dtype="float32")
    assert conv.op.input_tensors[0].op.name == "pad_temp"  # what templates inline
    s = te.create_schedule(conv.op)
    s[conv.op.input_tensors[0]].compute_inline()
    func = tvm.build(s, [data, kernel, conv], "llvm")
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (2, 3, 9, 8)).astype(np.float32)
    w = rng.uniform(-1, 1, (5, 3, 3, 3)).astype(np.float32)
    expected = conv2d_nchw_python(a, w, (2, 1), (1, 1))
    assert expected.shape == (2, 5, 5, 8)
    out = tvm.nd.empty(expected.shape)
    func(tvm.nd.array(a), tvm.nd.array(w), out)
    tvm.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_query_gives_the_best_config_or_the_fallback(tmp_path):
    task = autotvm.task.create("tests/matmul", args=(8, 5, 6, "float32"), target="llvm")
    assert task.workload == ("tests/matmul", 8, 5, 6, "float32")
    fallback = autotvm.apply_history_best(None).query(task.target, task.workload)
    assert fallback.knobs == {} and "tile_y': [-1, 1]" in repr(fallback)
    path = tmp_path / "matmul.log"
    autotvm.tuner.GridSearchTuner(task).tune(
        n_trial=6, callbacks=[autotvm.callback.log_to_file(str(path))]
    )
    # the timings of so small a product are noise: make the last configuration the fastest
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line["seconds"] = 0.5 if line["number"] == 5 else 1.0
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    best = sl.tune.load(path).best()
    assert best.number == 5
    chosen = autotvm.apply_history_best(str(path)).query(task.target, task.workload)
    assert repr(chosen) == f"Config({best.knobs})"
    cuda = autotvm.apply_history_best(str(path)).query("cuda", task.workload)
    assert repr(cuda) == repr(fallback) != repr(chosen)  # logged on the CPU: none for CUDA
