"""The workflow on a real SLURM cluster (one node, two CPUs; tests/integration/slurm_cluster.py)
through Snakemake's SLURM executor plugin and profiles/slurm, against the same workflow run locally.

Every paper's smoke cell runs both ways on the virtual-time lane (the simulated paper in ns-3), one
trial per SLURM job. Virtual time and seeded simulation make a trial a function of its inputs, so
the two runs must agree to the last digit: every trial's metrics and every verdict, not within a
tolerance. Then a trial job is killed by the scheduler mid-measurement: the workflow resubmits it,
the half-written trial is redone from the start, and the result is again the local one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration import slurm_cluster
from tests.integration.conftest import CHECKOUT

pytestmark = [pytest.mark.uml, pytest.mark.slurm]

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
PAPERS = ["collateral", "ledbat", "westwood", "wlan"]
# The plugin's settings for this cluster: no accounting database, so squeue answers for job states
# (MinJobAge 300 s) and there is no account to guess; short jobs, so the first check comes early.
PLUGIN = ["--slurm-status-command", "squeue", "--slurm-no-account", "--slurm-init-seconds-before-status-checks", "5"]


def workflow(results: Path, figures: Path, *extra: str, cluster: bool, papers: list[str] = PAPERS,
             cells: str = "") -> list[str]:
    where = (["--workflow-profile", str(CHECKOUT / "profiles" / "slurm"), "--jobs", "2", *PLUGIN] if cluster
             else ["--cores", "2"])
    return [SNAKEMAKE, *where, "--directory", str(CHECKOUT), "--snakefile", str(CHECKOUT / "Snakefile"), *extra,
            "--config", "profile=smoke", f"papers=[{','.join(papers)}]", f"results={results}",
            f"figures={figures}", *([f"cells={cells}"] if cells else [])]


def trial_dirs(results: Path) -> dict[str, Path]:
    return {str(d.relative_to(results)): d for d in sorted(results.glob("smoke/*/*/trial-*")) if d.is_dir()}


def outcome(trial: Path) -> dict:
    """What a trial measured (not how long it took): validity, metrics and per-flow results."""
    s = json.loads((trial / "summary.json").read_text())
    return {k: s[k] for k in ("valid", "invalid_reasons", "metrics", "flows")}


def verdicts(figures: Path) -> dict[str, list]:
    return {p: json.loads((figures / p / "smoke" / "verdicts.json").read_text()) for p in PAPERS}


@pytest.fixture(scope="module")
def env():
    if os.geteuid() != 0:
        pytest.skip("needs root: the test cluster's daemons (slurmd runs jobs as their user)")
    from testbed import uml_kernel
    uml_kernel.ensure()                         # built before the runs, not as the first cluster job
    return {k: v for k, v in os.environ.items() if k not in ("TCPREPRO_PAPER_DIR", "TCPREPRO_KERNEL")}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = slurm_cluster.start(tmp_path_factory.mktemp("slurm"))
    try:
        yield c
    finally:
        left = slurm_cluster.stop(c)
    assert not left, f"the cluster left running: {left}"


@pytest.fixture(scope="module")
def local(env, tmp_path_factory):
    """The smoke workflow run locally on the virtual-time lane, as the cluster runs it."""
    out = tmp_path_factory.mktemp("local")
    proc = subprocess.run(workflow(out / "results", out / "figures", cluster=False),
                          env={**env, "TCPREPRO_KERNEL": "uml"}, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


def test_smoke_through_slurm_equals_the_local_run(env, cluster, local, tmp_path):
    out = tmp_path
    proc = subprocess.run(cluster.command(workflow(out / "results", out / "figures", cluster=True)),
                          env={**env, **cluster.env}, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    mine, theirs = trial_dirs(out / "results"), trial_dirs(local / "results")
    assert sorted(mine) == sorted(theirs) and len(mine) == len(PAPERS), (sorted(mine), sorted(theirs))
    jobs = set()
    for name, trial in mine.items():
        prov = json.loads((trial / "provenance.json").read_text())
        job = prov.get("scheduler_job") or {}
        assert job.get("scheduler") == "slurm" and job.get("node") == slurm_cluster.NODE, (name, job)
        jobs.add(job["job_id"])
        simulated = name.split("/")[1] == "wlan"        # ns-3 on the node: no kernel under test
        assert prov["kernel"]["where"] == ("host" if simulated else "uml"), (name, prov["kernel"])
        assert outcome(trial) == outcome(theirs[name]), name
    assert len(jobs) == len(mine), f"one SLURM job per trial: {sorted(jobs)}"
    assert verdicts(out / "figures") == verdicts(local / "figures")
    for p in PAPERS:
        for table in sorted((local / "figures" / p / "smoke").glob("*.csv")):
            assert (out / "figures" / p / "smoke" / table.name).read_text() == table.read_text(), f"{p}/{table.name}"
    states = {line.split()[1] for line in cluster.jobs()}
    assert states == {"COMPLETED"}, cluster.jobs()


def test_a_trial_killed_by_the_scheduler_is_redone(env, cluster, local, tmp_path):
    """SIGKILL from scancel (as a node failure or a time limit's last step would end it) leaves a
    half-written trial; the profile's retry resubmits the job and the trial starts afresh."""
    cell = "ledbat-rtt40-n2-30mb"                       # the longest smoke trial: a minute or so
    results, figures = tmp_path / "results", tmp_path / "figures"
    partial = results / "smoke" / "ledbat" / cell / "trial-1.partial"
    run = subprocess.Popen(cluster.command(workflow(results, figures, "--until", "cell", cluster=True,
                                                    papers=["ledbat"], cells=cell)),
                           env={**env, **cluster.env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 600
        while not (partial / "spec.json").exists():
            assert run.poll() is None, run.stdout.read()[-4000:] if run.stdout else ""
            assert time.monotonic() < deadline, "the trial never started"
            time.sleep(0.5)
        time.sleep(5)                                   # well into the measurement
        running = [j.split()[0] for j in cluster.jobs() if j.split()[1] == "RUNNING"]
        assert len(running) == 1, cluster.jobs()
        subprocess.run(cluster.command(["scancel", "--full", "--signal=KILL", running[0]]), env=cluster.env, check=True)
        log, _ = run.communicate(timeout=1800)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, log[-4000:]
    assert "Trying to restart job" in log, log[-4000:]
    states = {j.split()[0]: j.split()[1] for j in cluster.jobs()}
    assert states[running[0]] in ("FAILED", "CANCELLED"), states
    trial = results / "smoke" / "ledbat" / cell / "trial-1"
    assert not partial.exists() and (trial / "summary.json").exists()
    assert outcome(trial) == outcome(local / "results" / "smoke" / "ledbat" / cell / "trial-1")
