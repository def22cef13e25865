"""The runtime's side of the CUDA driver, in one place: what loads, starts and launches kernels."""
