"""The CPU target: the host's LLVM JIT, the module of a lowered function with its C-callable
entry point, ``parallel`` loops and the native pool that runs them, and compiled code cached in
memory and on disk."""
