"""What schedules, loop nests and kernels show in a notebook (`_repr_html_`)."""

from __future__ import annotations

import re

import schedlang as sl
from schedlang.platform_info import cuda_available

from .algorithms import cpu_tiled, gpu_shared, matmul


def _badges(html: str) -> list[str]:
    return re.findall(r'<span class="sl-badge"[^>]*>([^<]*)</span>', html)


def test_a_loop_nest_marks_loop_kinds_and_guards():
    a, b, c = matmul()
    html = sl.lower(cpu_tiled(c), [a, b, c])._repr_html_()
    badges = _badges(html)
    for kind in ("parallel", "vectorized", "serial", "guard"):
        assert kind in badges, kind
    assert html.startswith('<div class="sl-view"><style>')
    assert "<script" not in html
    assert "for i.outer in range(" in html


def test_a_gpu_nest_shows_hardware_loops_allocations_and_barriers():
    a, b, c = matmul()
    s, _, _ = gpu_shared(a, b, c)
    html = sl.lower(s, [a, b, c])._repr_html_()
    badges = _badges(html)
    for tag in ("blockIdx.y", "blockIdx.x", "threadIdx.y", "threadIdx.x", "barrier", "shared"):
        assert tag in badges, tag
    # the allocations table: name, scope, type and bytes of each staging buffer
    assert re.search(
        r"<td>A\.shared</td><td><span[^>]*>shared</span></td><td>float32\[16, 16\]"
        r"</td><td class=\"sl-num\">1,024</td>",
        html,
    )
    assert "C.local" in html and ">local<" in html


def test_text_is_escaped():
    n = sl.var("n")
    x = sl.placeholder((n,), name="x<b>&")
    y = sl.compute((n,), lambda i: x[i] * 2.0, name="y")
    s = sl.create_schedule(y)
    s[y].parallel(y.op.axis[0])
    for html in (sl.lower(s, [x, y])._repr_html_(), s._repr_html_()):
        assert "x&lt;b&gt;&amp;" in html
        assert "x<b>" not in html


def test_a_long_nest_folds_its_inner_loops():
    a, b, c = matmul()
    s = sl.create_schedule(c)
    yo, xo, yi, xi = s[c].tile(c.op.axis[0], c.op.axis[1], 4, 32)
    s[c].unroll(xi)
    html = sl.lower(s, [a, b, c])._repr_html_()
    assert str(sl.lower(s, [a, b, c])).count("\n") > 80
    loops = re.findall(r'<details class="sl-loop"( open)?>', html)
    assert loops[0] == " open"
    assert "" in loops  # some loop starts folded


def test_a_schedule_shows_its_stage_graph_and_replayable_primitives():
    a, b, c = matmul()
    s, _, _ = gpu_shared(a, b, c)
    html = s._repr_html_()
    assert f"{len(s.records)} primitives" in html
    assert "at C.local / k.outer" in _badges(html)
    # each stage's row holds the lines that made and shaped it; the full text replays
    row = html[html.index("<b>A.shared</b>") : html.index("<b>B</b>")]
    assert "s.cache_read(A, &quot;shared&quot;, [C])" in row
    assert "sl.thread_axis(&quot;threadIdx.x&quot;)" in row
    assert s.describe().replace('"', "&quot;") in html


def test_a_cpu_kernel_shows_its_nest_and_llvm_ir():
    a, b, c = matmul()
    kernel = sl.build(cpu_tiled(c), [a, b, c])
    html = kernel._repr_html_()
    assert "Kernel" in html and "for <code>cpu</code>" in html
    assert "parallel" in _badges(html)
    assert "<summary>LLVM IR</summary>" in html and "define" in html


def test_a_cuda_kernel_built_without_a_gpu_shows_its_launch_configuration():
    a, b, c = matmul()
    s, _, _ = gpu_shared(a, b, c)
    kernel = sl.build(s, [a, b, c], target="cuda")
    html = kernel._repr_html_()
    assert "<th>grid</th><th>block</th>" in html
    config = kernel.launch_config[0]
    assert f"<code>({', '.join(config.grid)})</code>" in html
    assert "<code>(16, 16, 1)</code>" in html
    assert '<td class="sl-num">256</td><td class="sl-num">2,048</td>' in html
    if not cuda_available():
        assert "known once loaded on a GPU" in html
    assert "<summary>PTX</summary>" in html and ".entry" in html
    assert "threadIdx.x" in _badges(html)
