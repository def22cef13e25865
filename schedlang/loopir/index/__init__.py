"""What index arithmetic is known to do, which LLVM cannot see without the loop bounds."""
