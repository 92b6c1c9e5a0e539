"""Mininet topologies: declarations only; the trial lifecycle lives in testbed/."""
