"""The switch as an open choice on the virtual-time lane: the same cell over Linux bridges and over
Open vSwitch (Debian's ovs-vswitchd on the UML kernel's datapath, topologies/switches.py)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import CHECKOUT, PAPERS, trial_cmd

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


def test_a_fresh_machine_builds_the_kernel_for_new_trials_and_keeps_the_measured_ones(trials, tmp_path):
    """Archives restored, no kernel built yet, new trials to measure (here a second trial per cell):
    the plan builds the kernel and measures the new trials only. A kernel built in the same run must
    not count as newer input to the trials already measured (rules/common.smk trial_binaries)."""
    papers = tmp_path / "papers"
    papers.mkdir()
    config = (PAPERS / "umlswitch.yaml").read_text()
    (papers / "umlswitch.yaml").write_text(config.replace("smoke: {duration_s: 20, trials: 1}",
                                                          "smoke: {duration_s: 20, trials: 2}"))
    results = trials["ovs"].parents[3]
    env = {**os.environ, "TCPREPRO_PAPER_DIR": str(papers), "TCPREPRO_UML_BUILD": str(tmp_path / "no-kernel")}
    proc = subprocess.run([str(Path(sys.executable).with_name("snakemake")), "--dry-run", "--cores", "2",
                           "--directory", str(CHECKOUT), "--config", "papers=[umlswitch]", f"results={results}",
                           "profile=smoke", f"figures={tmp_path / 'figures'}"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plan = proc.stdout
    assert re.search(r"^uml_kernel +1$", plan, re.M), plan[-3000:]      # the plan's job counts
    planned = sorted(re.findall(r"output: (\S+/trial-\d+)$", plan, re.M))
    assert [p.split("/smoke/")[1] for p in planned] == ["umlswitch/cubic-linux-bridge/trial-2",
                                                        "umlswitch/cubic-ovs/trial-2"], planned
