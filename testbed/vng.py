"""virtme-ng (vng), which boots every guest of the VM lane: the KVM probe's and the shared VM's.

It is a Python package, so it lives in a venv's bin, which need not be on PATH; and it runs its
helper virtme-run from PATH, so the environment it is started with must have that directory.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from testbed.vm_errors import VMError

CHECKOUT_VNG = Path(__file__).resolve().parent.parent / ".venv" / "bin" / "vng"


def binary() -> str:
    """This Python's vng, else the checkout's venv's, else the one on PATH."""
    here = Path(sys.executable).parent / "vng"
    for cand in (here, CHECKOUT_VNG):
        if cand.exists():
            return str(cand)
    found = shutil.which("vng")
    if not found:
        raise VMError("virtme-ng (vng) not found: run `make deps`")
    return found


def env() -> dict[str, str]:
    """vng finds its helper virtme-run on PATH, so its own bin directory must be there."""
    environ = dict(os.environ)
    environ["PATH"] = os.pathsep.join([str(Path(binary()).parent), environ.get("PATH", "/usr/bin:/bin")])
    return environ
