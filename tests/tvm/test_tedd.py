"""``tvm.contrib.tedd``: TE's TEDD tutorial as written (a conv2d_hwcn with a bias and a relu,
TOPI's generic schedule), and the three graphs' contents after the primitives that shape
them: compute_at (the schedule tree's edge from the loop), split and fuse (the IterVar
relationship graph's nodes), binds and annotations (each loop's label)."""

from __future__ import annotations

import shutil

import pytest

import schedlang.tvm as tvm
from schedlang.tvm import te, topi
from schedlang.tvm.contrib import tedd


def _tutorial():
    a = te.placeholder((8, 8, 4, 1), name="A")
    w = te.placeholder((3, 3, 4, 6), name="W")
    b = te.placeholder((1, 6, 1), name="bias")
    with tvm.target.Target("llvm"):
        conv = topi.nn.conv2d_hwcn(a, w, 1, "SAME", 1)
        relu = topi.nn.relu(topi.add(conv, b))
        s = topi.generic.schedule_conv2d_hwcn([relu])
    return s, conv, relu


def test_the_tutorial_writes_its_three_files(tmp_path):
    s, _, _ = _tutorial()
    paths = [tmp_path / f"{name}.dot" for name in ("dfg", "tree", "tree2", "itervar")]
    tedd.viz_dataflow_graph(s, dot_file_path=str(paths[0]))
    tedd.viz_schedule_tree(s, dot_file_path=str(paths[1]))
    s = s.normalize()
    tedd.viz_schedule_tree(s, dot_file_path=str(paths[2]))
    tedd.viz_itervar_relationship_graph(s, dot_file_path=str(paths[3]))
    dataflow = paths[0].read_text()
    assert dataflow.startswith("digraph Dataflow_Graph {")
    names = [stage.name for stage in s.stages]
    producer, consumer = names.index("PaddedInput"), names.index("Conv2dOutput")
    assert f'stage_{producer} -> stage_{consumer} [label="PaddedInput"];' in dataflow
    tree = paths[1].read_text()
    assert tree.count(" -> ") == len(names)  # every stage at the root
    assert "<B>Conv2dOutput</B>" in tree and "rc (4)" in tree
    assert paths[3].read_text().count("subgraph cluster_") == len(names)


def test_a_stage_computed_at_a_loop_hangs_from_that_loop():
    s, conv, relu = _tutorial()
    padded = conv.op.input_tensors[0]
    s[padded].compute_at(s[conv], conv.op.axis[1])
    tree = tedd.viz_schedule_tree(s, output_dot_string=True)
    names = [stage.name for stage in s.stages]
    edge = f"stage_{names.index('Conv2dOutput')}:loop1 -> stage_{names.index('PaddedInput')};"
    assert edge in tree
    assert "attach: Scope" in tree


def test_split_and_fuse_are_nodes_between_their_loops_and_labels_say_what_was_asked():
    s, _, relu = _tutorial()
    i0, i1, i2, _ = relu.op.axis
    outer, inner = s[relu].split(i2, factor=4)
    fused = s[relu].fuse(i0, i1)
    s[relu].vectorize(inner)
    s[relu].parallel(fused)
    graph = tedd.viz_itervar_relationship_graph(s, output_dot_string=True)
    cluster = graph[graph.index(f'label="{relu.op.name}"') :]
    assert 'label="Split\\nfactor=4"' in cluster and 'label="Fuse"' in cluster
    assert "[vectorized]" in cluster and "[parallel]" in cluster
    assert cluster.count("style=bold") == 4  # the leaves: fused, i3, outer, inner
    tree = tedd.viz_schedule_tree(s, output_dot_string=True)
    assert "[vectorized]" in tree


@pytest.mark.skipif(shutil.which("dot") is not None, reason="Graphviz is installed here")
def test_svg_without_graphviz_says_what_is_missing():
    s, _, _ = _tutorial()
    with pytest.raises(RuntimeError, match="Graphviz's 'dot' program, which is not installed"):
        tedd.viz_dataflow_graph(s, show_svg=True)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graphviz_renders_the_three_graphs():
    s, _, _ = _tutorial()
    for draw in (tedd.viz_dataflow_graph, tedd.viz_schedule_tree):
        assert "<svg" in tedd._svg(draw(s, output_dot_string=True))
    graph = tedd.viz_itervar_relationship_graph(s, output_dot_string=True)
    assert "<svg" in tedd._svg(graph)
