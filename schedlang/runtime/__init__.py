"""Running compiled kernels: argument checks, the CPU's parallel pool, timing."""
