"""Benchmarks: timings of whole commands on this machine, for docs/measurements.md (not tests)."""
