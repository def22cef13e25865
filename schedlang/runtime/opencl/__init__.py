"""OpenCL kernels run through pyopencl (an optional dependency): the device (`device`) and the
kernel object that calls go through (`kernel`)."""
