"""The CPU target: the host's LLVM JIT, the module of a lowered function with its C-callable
entry point, ``parallel`` loops run by a thread pool, and compiled code cached in memory and on
disk."""
