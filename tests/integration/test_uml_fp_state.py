"""The FP state a resume no longer writes back when the host process holds it already
(kernel/uml/patches/0009): values kept in a vector register survive, in two threads of one process
and in a forked child, the stops that read and write the state (a system call that switches
threads, a page fault's stub, a signal handler's floating-point work)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import CHECKOUT

pytestmark = [pytest.mark.uml]

PROBE = CHECKOUT / "tests/integration/guest_fp_probe.c"


def test_vector_registers_survive_switches_faults_and_signals(tmp_path):
    from testbed import uml, uml_kernel
    share = tmp_path / "share"
    share.mkdir()
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(share / "fp_probe"), str(PROBE)], check=True)
    run = uml.run(["sh", "-c", f"{uml.GUEST_SHARE}/fp_probe > {uml.GUEST_SHARE}/out.txt 2>&1"],
                  share=share, cwd=Path("/"), env={}, seed=5, kernel=uml_kernel.ensure())
    out = (share / "out.txt").read_text()
    assert run.rc == 0 and out == "ok\n", out
