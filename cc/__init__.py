"""Congestion controls by name: which implementation serves a paper's algorithm on this kernel."""
