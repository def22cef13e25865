"""Loops reshaped after isl made them, so targets see constant trip counts and no hot branches."""
