"""Baselines, metrics and benchmarks on plain arrays."""
