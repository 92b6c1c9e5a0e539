"""The virtual-time lane against the QEMU TCG lane: the same cells on both, compared per metric.

`python -m analysis.crossval` reads results/crossval/ and writes figures/crossval/.
"""
