"""Benchmarks: commands that print figures (a table and JSON), never timed asserts."""
