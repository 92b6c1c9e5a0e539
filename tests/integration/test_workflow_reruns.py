"""What the workflow redoes when the code or config behind a result changes: the aggregation and the
figures (their digest is a rule parameter), never the trials. Runs the short simulated paper
(tests/data/papers/wlanshort.yaml: 12 s of ns-3 per trial), so it needs no root and no VM."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sim import build
from tests.integration.conftest import CHECKOUT, PAPERS

pytestmark = pytest.mark.skipif(not build.NS3_HEADER.exists(), reason="needs libns3-dev (make deps)")
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def test_a_config_change_reruns_the_aggregation_not_the_trials(tmp_path: Path) -> None:
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
