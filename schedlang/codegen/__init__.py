"""Code generation: the loop IR to LLVM IR with llvmlite, then to machine code.

One translator of expressions (`llvm_expr`) and statements (`llvm_stmt`) serves every target;
what differs between targets (address spaces, allocations, parallel loops, thread indices,
barriers, external math) sits behind `target.Target`. `cpu` is the host JIT.
"""
