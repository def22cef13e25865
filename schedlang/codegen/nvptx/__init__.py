"""The NVPTX target: a lowered function cut into CUDA kernels (`plan`), their LLVM module
(`module`), what `Target` means inside a kernel (`target`, `nvvm`, `convert`), block collectives
(`allreduce`), uniform stores (`uniform`), libdevice and schedlang's own float math
(`softmath`), and PTX compiled once per process (`compile`)."""
