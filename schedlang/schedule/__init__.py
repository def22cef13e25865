"""Schedules: stages, their loop primitives, and the records those primitives append."""
