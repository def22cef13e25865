"""The source of a script as its schedule runs it, for ``te.hybrid.build``: TE's module is the
scheduled program, so a loop the schedule binds to a thread index, or runs in parallel,
vectorized or unrolled, is written so in the module's script (``for i in range(n)`` becomes
``for i in bind("threadIdx.x", n)``), and a call of the module gives a script that runs so.

The script's loops are the stage's axes, in the order the parser meets them (`loop_itervars`);
they are matched with the ``for`` statements of the source in the same order, by name. What
the source cannot say of a loop (a split, a fuse, a reorder, a loop unrolled by
``const_range`` or in an inlined script) is refused, naming it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ....errors import ScheduleError
from ....ir.hybrid import HybridOp

_ANNOTATED = {"parallel": "parallel", "vectorize": "vectorize", "unroll": "unroll"}


def scheduled_source(src: str, sch: object, op: HybridOp) -> str | None:
    """`src` (the script's source) with the loop kinds the schedule `sch` gives `op`'s stage;
    None where the schedule changes none."""
    stage = sch[op]
    name = op.call.name
    if stage.relations or list(stage.leaves) != list(stage.root_axes):
        raise ScheduleError(
            f"te.hybrid.build: the schedule of '{stage.name}' splits, fuses or reorders the "
            f"loops of the script '{name}', which its module cannot carry; it carries binds and "
            "loop kinds (parallel, vectorize, unroll)"
        )
    wanted = {}
    for axis in stage.root_axes:
        tag = stage.binds.get(axis)
        kind = _ANNOTATED.get(stage.annotations.get(axis, ""))
        if tag is not None or kind is not None:
            wanted[stage.itervars[axis].var] = ("bind", tag) if tag is not None else (kind, None)
    if not wanted:
        return None
    tree = ast.parse(src)
    loops = [node for node in _statements(tree) if isinstance(node, ast.For)]
    axes = [iv.var for iv in op.call.axis]
    if any(_callee(node) == "const_range" for node in loops) or len(loops) != len(axes):
        raise ScheduleError(
            f"te.hybrid.build: the loops of the script '{name}' are not its for statements "
            "one for one (const_range unrolls some, or it calls another script), so its module "
            "cannot carry their schedule"
        )
    for node, var in zip(loops, axes):
        if var.name.split(".")[0] != getattr(node.target, "id", None):
            raise ScheduleError(
                f"te.hybrid.build: the loop '{var.name}' of the script '{name}' is not the for "
                "statement met in its place; its module cannot carry the schedule"
            )
        if var in wanted:
            node.iter = _iterator(node, *wanted[var], name)
    return ast.unparse(tree) + "\n"


def _statements(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes under `node`, each before those inside it, in the order of the source."""
    for child in ast.iter_child_nodes(node):
        yield child
        yield from _statements(child)


def _callee(node: ast.For) -> str | None:
    call = node.iter
    return call.func.id if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) else None


def _iterator(node: ast.For, kind: str, tag: str | None, name: str) -> ast.Call:
    args = list(node.iter.args)
    if kind != "bind":
        return ast.Call(ast.Name(kind, ast.Load()), args, [])
    if _callee(node) == "bind":
        args = args[1:]
    elif len(args) == 2 and not (isinstance(args[0], ast.Constant) and args[0].value == 0):
        raise ScheduleError(
            f"te.hybrid.build: the loop over '{node.target.id}' of the script '{name}' starts "
            f"at {ast.unparse(args[0])}; a loop bound to {tag} starts at 0"
        )
    return ast.Call(ast.Name("bind", ast.Load()), [ast.Constant(tag), args[-1]], [])
