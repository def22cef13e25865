"""Code generation: the loop IR to LLVM IR with llvmlite, then to machine code.

One translator of expressions and statements (`llvm/`) serves every target; what differs
between targets (address spaces, allocations, parallel loops, thread indices, barriers,
external math) sits behind `llvm.target.Target`. `cpu/` is the host JIT, `nvptx/` the CUDA
target; `fingerprint` and `disk_cache` key and keep compiled code for both.
"""
