"""The loop IR: statements, passes, printer and a reference interpreter.

`from_isl` makes it from isl's AST; `core/` is the IR itself (nodes, traversal, printer,
folding); the passes are grouped by what they own, in `memory/`, `loops/`, `index/`, `intrin/`
and `gpu/`; `interpret/` runs it. `driver._lower` applies the passes, in order, on one screen.
"""
