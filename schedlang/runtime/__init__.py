"""Running compiled kernels: argument checks, the CPU thread pool, timing."""
