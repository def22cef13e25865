"""The translator every target shares: loop-IR expressions (`expr`, with `arith`, `math`,
`types`) and statements (`stmt`, `function`, `control`) to LLVM IR with llvmlite, vectorized
loops (`vector`, `lanes`, `alignment`), register arrays as SSA values (`register_values`), and
what a target must supply (`target`)."""
