"""The switch as an open choice on the virtual-time lane: the same cell over Linux bridges and over
Open vSwitch (Debian's ovs-vswitchd on the UML kernel's datapath, topologies/switches.py)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.integration.conftest import PAPERS, trial_cmd

pytestmark = [pytest.mark.uml]

@pytest.fixture(scope="module")
def trials(tmp_path_factory):
    from testbed import uml_kernel
    uml_kernel.ensure()
    env = dict(os.environ, TCPREPRO_PAPER_DIR=str(PAPERS), TCPREPRO_KERNEL="uml")
    base = tmp_path_factory.mktemp("switch")
    out = {s: base / "smoke" / "umlswitch" / f"cubic-{s}" / "trial-1" for s in ("linux-bridge", "ovs")}
    procs = {s: subprocess.Popen(trial_cmd("umlswitch", f"cubic-{s}", d), env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for s, d in out.items()}
    for s, proc in procs.items():
        _, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{s}: {err[-3000:]}"
    return out


def test_open_vswitch_forwards_through_its_kernel_datapath_and_the_trial_passes_its_checks(trials):
    d = trials["ovs"]
    prov = json.loads((d / "provenance.json").read_text())
    summary = json.loads((d / "summary.json").read_text())
    assert summary["valid"], summary["invalid_reasons"]
    for side in ("bl", "br"):
        sw = prov["switch"][side]
        assert sw["kind"] == "ovs" and sw["fail_mode"] == "standalone"
        assert sw["datapath"] == "system@ovs-system", sw
        assert sw["version"].startswith("ovs-vswitchd (Open vSwitch)"), sw
    checks = {c["name"]: c for c in prov["fidelity"]}
    assert all(c["pass"] is not False for c in checks.values()), [c for c in checks.values() if c["pass"] is False]
    assert checks["base_rtt"]["measured"] == pytest.approx(50.0, abs=0.05)
    assert summary["metrics"]["owd_median_ms"] > 300, "CUBIC keeps the 60000-byte queue mostly full"


def test_the_reference_cell_runs_linux_bridges(trials):
    prov = json.loads((trials["linux-bridge"] / "provenance.json").read_text())
    assert prov["switch"] == {"bl": {"kind": "linux-bridge"}, "br": {"kind": "linux-bridge"}}


def test_the_traffic_crossed_open_vswitchs_kernel_datapath(trials):
    """Every VoIP packet crosses both switches: each datapath's kernel flows forwarded at least as
    many packets, and only a flow's first packets went up to ovs-vswitchd."""
    prov = json.loads((trials["ovs"] / "provenance.json").read_text())
    summary = json.loads((trials["ovs"] / "summary.json").read_text())
    for side in ("bl", "br"):
        counts = prov["switch"][side]
        assert counts["hit"] >= summary["metrics"]["voip_sent"], counts
        assert 0 < counts["missed"] < counts["hit"] / 10, counts

