"""The robustness runs end to end, on the virtual-time lane: Collateral Damage's smoke cell with two
of its open choices' alternatives selected. The dummynet queue's stand-in is a cell the matrix
already has (measured once, under its own name); the longer trial is a twin, a cell of its own. Both
are placed, measured and aggregated by the workflow like any cell, every claim is judged under every
alternative, and verdict.md shows the table."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from configuration import choices
from tests.integration.conftest import CHECKOUT

pytestmark = [pytest.mark.uml]

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def test_alternatives_are_measured_in_place_of_their_cells_and_every_claim_judged(tmp_path):
    from testbed import uml_kernel
    uml_kernel.ensure()
    env = {k: v for k, v in os.environ.items() if k != "TCPREPRO_PAPER_DIR"} | {"TCPREPRO_KERNEL": "uml"}
    results, figures = tmp_path / "results", tmp_path / "figures"
    proc = subprocess.run([SNAKEMAKE, "--cores", "2", "--directory", str(CHECKOUT), "--snakefile",
                           str(CHECKOUT / "Snakefile"), "--config", "papers=[collateral]", "profile=smoke",
                           f"results={results}", f"figures={figures}", "robustness=queue_accounting.*,trial_length.*"],
                          env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = results / "smoke" / "collateral"
    twin = choices.twin_id("cubic-rtt50-f1", "trial_length", "s360")
    cells = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert cells == sorted(["cubic-rtt50-f1", "cubic-dnqueue-rtt50-f1", twin])
    dn = json.loads((out / "cubic-dnqueue-rtt50-f1" / "trial-1" / "spec.json").read_text())
    assert dn["scenario"]["bottleneck"]["forward"]["limit_bytes"] == 62060
    long = json.loads((out / twin / "trial-1" / "spec.json").read_text())
    assert long["cell"] == twin and long["duration_s"] == 360 and long["bulk_generator"] == "iperf2"
    assert json.loads((out / twin / "trial-1" / "provenance.json").read_text())["kernel"]["where"] == "uml"
    assert json.loads((out / twin / "cell.json").read_text())["n_valid"] == 1

    doc = json.loads((figures / "collateral" / "smoke-robustness.json").read_text())
    by_key = {f"{a['choice']}.{a['alternative']}": a for a in doc["alternatives"]}
    assert set(by_key) == {"queue_accounting.dummynet", "htcp_backoff.linux_module", "trial_length.s360",
                           "bulk_generator.iperf3", "switch.ovs"}
    for measured in ("queue_accounting.dummynet", "trial_length.s360"):
        assert (by_key[measured]["touched"], by_key[measured]["not_measured"]) == (1, []), measured
    for unselected in ("bulk_generator.iperf3", "switch.ovs"):                         # not selected: not run
        assert by_key[unselected]["not_measured"] == ["cubic-rtt50-f1"], unselected
    assert set(by_key["htcp_backoff.linux_module"]["verdicts"]) == set(doc["reference"])  # touches no CUBIC cell
    assert by_key["htcp_backoff.linux_module"]["touched"] == 0
    verdict = (figures / "collateral" / "smoke" / "verdict.md").read_text()
    assert "## Robustness to what the paper leaves open" in verdict and "`trial_length.s360`*" in verdict
