"""``tvm.contrib.tedd``: TE's three pictures of a schedule, as Graphviz DOT.

- the dataflow graph: a node per stage, an edge per tensor one stage reads of another;
- the schedule tree: each stage with its loops (outermost first, each with what the schedule
  asked of it), under the root or under the loop of the stage it is computed at;
- the IterVar relationship graph: per stage, its loops as split and fuse made them.

Each function writes the DOT text to `dot_file_path` where one is given, returns it with
`output_dot_string`, and with `show_svg` renders it by Graphviz's ``dot`` program (shown in
a notebook, returned elsewhere). DOT is a text format, written here; only the rendering needs
Graphviz.
"""

from __future__ import annotations

import html
import shutil
import subprocess

from ...schedule import records as rec
from ...schedule.introspect import AttachType, made_axes, shown


def viz_dataflow_graph(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """Stages and the tensors that flow between them."""
    index = {stage.name: k for k, stage in enumerate(sch.stages)}
    lines = ["digraph Dataflow_Graph {", "  rankdir=LR;", "  node [shape=box];"]
    for stage in sch.stages:
        kind = type(stage.op).__name__
        tag = getattr(stage.op, "tag", "") or ""
        label = f"{stage.name}\\n{kind}" + (f"\\ntag: {tag}" if tag else "")
        lines.append(f'  stage_{index[stage.name]} [label="{_quoted(label)}"];')
    for stage in sch.stages:
        for tensor in getattr(stage.op, "input_tensors", []):
            producer = index.get(tensor.op.name)
            if producer is not None:
                edge = f"stage_{producer} -> stage_{index[stage.name]}"
                lines.append(f'  {edge} [label="{_quoted(tensor.name)}"];')
    return _finish(lines, show_svg, dot_file_path, output_dot_string)


def viz_schedule_tree(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """Each stage's loops, under the loop it is computed at (or the root)."""
    index = {stage.name: k for k, stage in enumerate(sch.stages)}
    lines = ["digraph Schedule_Tree {", "  node [shape=plaintext];", '  root [label="ROOT"];']
    for stage in sch.stages:
        rows = [f'<TR><TD BGCOLOR="lightgrey"><B>{_html(stage.name)}</B></TD></TR>']
        attach = AttachType(stage.attach_type).name
        rows.append(f"<TR><TD>attach: {attach}</TD></TR>")
        for k, loop in enumerate(stage.leaves):
            rows.append(f'<TR><TD PORT="loop{k}">{_html(_loop_text(stage, loop))}</TD></TR>')
        table = '<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">' + "".join(rows) + "</TABLE>"
        lines.append(f"  stage_{index[stage.name]} [label=<{table}>];")
    for stage in sch.stages:
        attach = stage.attach
        if isinstance(attach, rec.ComputeAt) and attach.target in index:
            port = _port(sch[attach.target], attach.axis)
            lines.append(f"  stage_{index[attach.target]}:{port} -> stage_{index[stage.name]};")
        else:
            style = " [style=dashed]" if isinstance(attach, rec.ComputeInline) else ""
            lines.append(f"  root -> stage_{index[stage.name]}{style};")
    return _finish(lines, show_svg, dot_file_path, output_dot_string)


def viz_itervar_relationship_graph(sch, show_svg=False, dot_file_path="", output_dot_string=False):
    """Per stage, its root loops and what split and fuse made of them; leaves in bold."""
    lines = ["digraph IterVar_Relationship_Graph {", "  node [shape=box];"]
    for k, stage in enumerate(sch.stages):
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f'    label="{_quoted(stage.name)}";')
        leaves = set(stage.leaves)
        names = {}
        for axis in (*stage.root_axes, *made_axes(stage)):
            names[axis] = f"s{k}_{len(names)}"
            bold = ", style=bold" if axis in leaves else ""
            label = _quoted(_loop_text(stage, axis))
            lines.append(f'    {names[axis]} [label="{label}"{bold}];')
        for j, relation in enumerate(stage.relations):
            node = f"s{k}_r{j}"
            if isinstance(relation, rec.Split):
                split = relation
                how = f"factor={split.factor}" if split.factor else f"nparts={split.nparts}"
                lines.append(f'    {node} [shape=ellipse, label="Split\\n{how}"];')
                lines.append(f"    {names[relation.parent]} -> {node};")
                lines += [f"    {node} -> {names[a]};" for a in (relation.outer, relation.inner)]
            else:
                lines.append(f'    {node} [shape=ellipse, label="Fuse"];')
                lines += [f"    {names[a]} -> {node};" for a in relation.axes]
                lines.append(f"    {node} -> {names[relation.fused]};")
        lines.append("  }")
    return _finish(lines, show_svg, dot_file_path, output_dot_string)


def _loop_text(stage, axis) -> str:
    """A loop as the pictures show it: its name, range, and what the schedule asked of it."""
    item = shown(stage, axis)
    text = getattr(getattr(item, "var", None), "name", None) or getattr(axis, "name", str(axis))
    extent = stage.extents.get(axis)
    if extent is not None:
        text += f" ({extent})"
    asked = [stage.annotations.get(axis), stage.binds.get(axis)]
    if stage.tensorized is not None and stage.tensorized.axis == axis:
        asked.append("tensorized")
    return text + "".join(f" [{a}]" for a in asked if a)


def _port(stage, axis) -> str:
    leaves = list(stage.leaves)
    return f"loop{leaves.index(axis)}" if axis in leaves else "n"


def _quoted(text: str) -> str:
    return text.replace('"', '\\"')


def _html(text: str) -> str:
    return html.escape(text, quote=True)


def _finish(lines, show_svg: bool, dot_file_path: str, output_dot_string: bool):
    lines.append("}")
    dot = "\n".join(lines) + "\n"
    if dot_file_path:
        with open(dot_file_path, "w") as f:
            f.write(dot)
    if show_svg:
        return _show(_svg(dot))
    return dot if output_dot_string else None


def _svg(dot: str) -> str:
    program = shutil.which("dot")
    if program is None:
        raise RuntimeError(
            "show_svg renders the graph with Graphviz's 'dot' program, which is not installed; "
            "write the DOT text (dot_file_path=...) and render it elsewhere"
        )
    done = subprocess.run([program, "-Tsvg"], input=dot, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"Graphviz's dot could not render the graph: {done.stderr.strip()}")
    return done.stdout


def _show(svg: str):
    try:
        from IPython.display import SVG, display
    except ImportError:
        return svg
    display(SVG(svg))
    return None
