"""LEDBAT's behaviour on the virtual-time lane, where a trial's timing does not depend on what else
the machine runs (in the real-time QEMU lane a loaded host fails these trials' fidelity checks):
the fixed-beta multiplicative decreases empty the queue at the paper's 40 ms base RTT. The lane's
kernel has the LEDBAT family built in, from the source of the BPF objects (cc/ledbat/ledbat.h)."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.integration.conftest import trial_cmd
from tests.integration.series import drains
from tests.integration.test_uml_trial import lane_env  # noqa: F401  (the lane's kernel and paper folder)

pytestmark = [pytest.mark.uml]


def run_on_uml(env: dict[str, str], tmp_path, paper: str, cell: str):
    """One trial on the lane, valid at the first attempt: (summary, provenance, trial dir)."""
    out = tmp_path / paper / cell / "trial-1"
    proc = subprocess.run(trial_cmd(paper, cell, out), env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    prov = json.loads((out / "provenance.json").read_text())
    assert summary["valid"] and summary["attempt"] == 1, summary["invalid_reasons"]
    assert prov["kernel"]["where"] == "uml"
    return summary, prov, out


@pytest.mark.parametrize("name", ["ledbat-md-nf2", "ledbat-md-nf1"])
def test_fixed_beta_md_drains_the_queue_at_40ms(name, lane_env, tmp_path):  # noqa: F811
    """At the paper's 40 ms base RTT, beta = 0.6 leaves cwnd*beta below the path's BDP plus a
    few packets, so each decrease empties the queue (with no base delay it cannot: see ledbatq)."""
    summary, prov, out = run_on_uml(lane_env, tmp_path, "ledbatmd", name)
    assert prov["congestion_controls"][name]["impl"] == "builtin"
    assert drains(out, prov, name, summary) >= 5
