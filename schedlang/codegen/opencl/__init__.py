"""The OpenCL target: OpenCL C 1.2 source for the kernels the NVPTX target's plan cuts out of a
lowered function (`nvptx.plan`: the same kernels, grids and blocks). What OpenCL cannot say
is refused by name (`unsupported`); types and literals (`types`), identifiers (`names`),
the helper functions that give the loop IR's arithmetic its meaning (`helpers`), expressions
(`expr`), statements (`stmt`), block collectives (`allreduce`) and the program (`source`)
each have a module."""
