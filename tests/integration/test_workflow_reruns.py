"""What the workflow redoes when the code or config behind a result changes: the aggregation and the
figures (their digest is a rule parameter), never the trials. Runs the short simulated paper
(tests/data/papers/wlanshort.yaml: 12 s of ns-3 per trial), so it needs no root and no VM."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sim import build
from tests.integration.conftest import CHECKOUT, PAPERS

pytestmark = pytest.mark.skipif(not build.NS3_HEADER.exists(), reason="needs libns3-dev (make deps)")
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def short_wlan_workflow(tmp_path: Path) -> tuple[Path, Path, Callable[..., str]]:
    """(papers folder, results folder, run) for the short simulated paper; run(*extra) returns the output."""
    papers, results = tmp_path / "papers", tmp_path / "results"
    papers.mkdir()
    shutil.copy(PAPERS / "wlanshort.yaml", papers / "wlanshort.yaml")
    env = {**os.environ, "TCPREPRO_PAPER_DIR": str(papers)}

    def snakemake(*extra: str) -> str:
        cmd = [SNAKEMAKE, "--cores", "2", "--directory", str(CHECKOUT), "--snakefile", str(CHECKOUT / "Snakefile"),
               "--config", "papers=[wlanshort]", f"results={results}", "profile=smoke", *extra]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    return papers, results, snakemake


def test_a_config_change_reruns_the_aggregation_not_the_trials(tmp_path: Path) -> None:
    papers, results, snakemake = short_wlan_workflow(tmp_path)
    snakemake()
    trial = results / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-1" / "summary.json"
    made = trial.stat().st_mtime
    assert "Nothing to be done" in snakemake("--dry-run")
    (papers / "wlanshort.yaml").write_text((papers / "wlanshort.yaml").read_text() + "# a changed comment\n")
    plan = snakemake("--dry-run")
    assert re.findall(r"^(?:local)?rule (\w+):", plan, re.M).count("cell") == 2 and "rule trial:" not in plan
    assert "Params have changed since last execution" in plan
    snakemake()
    assert trial.stat().st_mtime == made, "a trial was run again"
    assert "Nothing to be done" in snakemake("--dry-run")


def test_a_trial_whose_last_attempt_failed_on_a_real_time_lane_is_measured_again(tmp_path: Path) -> None:
    """The next run redoes it once, carrying the failed attempts into its count and its records
    (testbed/attempts.py). A simulated trial is never left for a retry, so this test writes the
    record a real-time lane leaves (valid false, retry_next_run, the attempts kept aside) over a
    finished simulated trial, and lets the workflow measure it again."""
    import json

    from analysis import validate
    from testbed import attempts

    _, results, snakemake = short_wlan_workflow(tmp_path)
    snakemake()
    trial = results / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-1"
    summary = json.loads((trial / "summary.json").read_text())
    assert summary["attempt"] == 1 and summary["earlier_attempts"] == 0 and summary["retry_next_run"] is False
    assert attempts.retry_key(trial) == "0" and "Nothing to be done" in snakemake("--dry-run")

    summary.update(valid=False, invalid_reasons=["staged: the last attempt failed its checks"], retry_next_run=True)
    (trial / "summary.json").write_text(json.dumps(summary))
    attempts.keep_for_retry(trial)
    plan = snakemake("--dry-run")
    assert re.findall(r"^(?:local)?rule (\w+):", plan, re.M).count("trial") == 1
    assert "Params have changed since last execution" in plan

    snakemake()
    again = json.loads((trial / "summary.json").read_text())
    assert again["valid"] and again["attempt"] == 2 and again["invalid_attempts"] == again["earlier_attempts"] == 1
    earlier = json.loads((trial / "invalid-attempts" / "1" / "summary.json").read_text())
    assert earlier["invalid_reasons"] == ["staged: the last attempt failed its checks"]
    prov = json.loads((trial / "provenance.json").read_text())
    assert prov["attempts"] == {"total": 2, "this_run": 1, "earlier_runs": 1}
    validate(prov, "provenance")
    validate(again, "summary")
    assert not attempts.earlier_dir(trial).exists()
    assert "Nothing to be done" in snakemake("--dry-run")
