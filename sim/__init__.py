"""Simulated testbeds: C++ models (ns-3) kept as sources in sim/<model>/, compiled by `sim.build`."""
