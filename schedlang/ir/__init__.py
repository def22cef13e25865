"""The algorithm language: expressions, tensors, reducers, math, printing and the reference."""
