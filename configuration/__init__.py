"""configuration: the ground floor. Where the checkout is, and its config files read and checked
(paper and workflow configs, YAML input, output folders); it imports nothing else of the project."""
import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent

# Mininet imports distutils; setuptools' shim would route that through pkg_resources, which scans
# every installed distribution (20 s per process under QEMU TCG). The stdlib module does the job.
# Set here because every process of the project imports this package before Mininet.
os.environ.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")
# A second sample of a paper's reference cells (other trial seeds, docs/robustness.md): its results
# and its compact archive are this folder under the usual ones (results/, data/).
SECOND_SAMPLE = "second-sample"
