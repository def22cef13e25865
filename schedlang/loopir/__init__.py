"""The loop IR: statements, passes, printer and a reference interpreter."""
