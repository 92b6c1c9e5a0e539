"""tcprepro: re-run four classic TCP studies on emulated networks and regenerate their results."""
import os
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent

# Mininet imports distutils; setuptools' shim would route that through pkg_resources, which scans
# every installed distribution (20 s per process under QEMU TCG). The stdlib module does the job.
os.environ.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")
