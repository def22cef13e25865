"""Compiled kernels as HTML for notebooks: the loop nest they run and how they launch.

A CUDA kernel shows its launch configuration first (per kernel of the module: grid, block,
shared memory, registers once a GPU has loaded it), then the lowered nest, then its PTX and
LLVM IR folded away. A CPU kernel shows its nest and its LLVM IR. Generated code can run to
megabytes, which a notebook would store in full, so each listing is cut at `LISTING_LIMIT`
characters with a note of where to read the rest.
"""

from __future__ import annotations

from ..htmlkit import code_block, escape, fold, page, table
from ..loopir.core.html import func_body_html
from ..loopir.core.printer import type_str

LISTING_LIMIT = 100_000


def kernel_html(kernel) -> str:
    """A `Kernel` or `CudaKernel` as a self-contained HTML page."""
    func = kernel.lowered
    params = ", ".join(f"{b.name}: {type_str(b)}" for b in func.params)
    title = (
        f"{escape(type(kernel).__name__)} <code>{escape(f'{func.name}({params})')}</code> "
        f"for <code>{escape(kernel.target)}</code>"
    )
    parts = []
    listings = [("LLVM IR", "llvm_ir", kernel.llvm_ir)]
    if hasattr(kernel, "launch_config"):
        parts.append(launch_html(kernel.launch_config))
        listings.insert(0, ("PTX", "ptx", kernel.ptx))
    parts.append(fold("loop nest", func_body_html(func), open=True))
    for name, attribute, text in listings:
        parts.append(fold(escape(name), _listing(text, attribute)))
    return page(title, "".join(parts))


def launch_html(configs) -> str:
    """A table of `LaunchConfig`s, one row per kernel in launch order."""
    rows = []
    for c in configs:
        threads = c.block[0] * c.block[1] * c.block[2]
        shared = f"{c.shared_bytes:,}" + (" (dynamic)" if c.dynamic_shared else "")
        registers = str(c.registers) if c.registers is not None else "known once loaded on a GPU"
        rows.append(
            (
                f"<code>{escape(c.kernel)}</code>",
                f"<code>({escape(', '.join(c.grid))})</code>",
                f"<code>{c.block}</code>",
                str(threads),
                shared,
                escape(registers),
            )
        )
    headers = ("kernel", "grid", "block", "threads", "shared bytes", "registers per thread")
    return table(headers, rows, numeric=(False, False, False, True, True, True))


def _listing(text: str, attribute: str) -> str:
    if len(text) <= LISTING_LIMIT:
        return code_block(text)
    cut = text[:LISTING_LIMIT].rsplit("\n", 1)[0]
    shown, total = cut.count("\n") + 1, text.count("\n") + 1
    note = f"the first {shown} of {total} lines; kernel.{attribute} holds all of them"
    return f'<div class="sl-muted">{escape(note)}</div>' + code_block(cut)
