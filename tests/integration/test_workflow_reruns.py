"""What the workflow redoes when the code or config behind a result changes: the aggregation and the
figures (their digest is a rule parameter), never the trials. Runs the short simulated paper
(tests/data/papers/wlanshort.yaml: 12 s of ns-3 per trial), so it needs no root and no VM."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
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


def checkout_view(where: Path) -> Path:
    """Another checkout, as Snakemake sees one: a working folder of its own (its .snakemake, its
    locks and records) whose files are this checkout's (links), the Snakefile this one's."""
    where.mkdir()
    for entry in CHECKOUT.iterdir():
        if entry.name not in (".snakemake", ".git", "results", "figures"):
            (where / entry.name).symlink_to(entry)
    return where


def wlanshort_env(tmp_path: Path, trials: int) -> dict[str, str]:
    """The environment of a run of test paper wlanshort with 30-s smoke trials, `trials` per cell."""
    papers = tmp_path / "papers"
    papers.mkdir()
    text = (PAPERS / "wlanshort.yaml").read_text().replace("smoke: {duration_s: 12, warmup_s: 2, trials: 1}",
                                                           f"smoke: {{duration_s: 30, warmup_s: 2, trials: {trials}}}")
    (papers / "wlanshort.yaml").write_text(text)
    return {**os.environ, "TCPREPRO_PAPER_DIR": str(papers)}


def test_two_checkouts_never_write_one_results_folder_at_once(tmp_path: Path) -> None:
    """Each Snakemake locks only its own checkout's outputs: a second checkout's run in the same
    results folder once removed the first's finished trials (a trial that appeared after it planned
    its run is removed before its job; a failed job's outputs after it). While one checkout's run
    writes a results folder, another's is refused in one line and deletes nothing; once it ended,
    the other finds nothing to do."""
    results = tmp_path / "results"
    env = wlanshort_env(tmp_path, trials=2)

    def snakemake(checkout: Path) -> list[str]:
        return [SNAKEMAKE, "--cores", "1", "--directory", str(checkout), "--snakefile", str(CHECKOUT / "Snakefile"),
                "--config", "papers=[wlanshort]", f"results={results}", f"figures={tmp_path / 'figures'}",
                "profile=smoke"]

    first, second = checkout_view(tmp_path / "a"), checkout_view(tmp_path / "b")
    running = subprocess.Popen(snakemake(first), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not (results / "smoke" / ".plan.json").exists():      # written once its run has claimed the folder
        assert time.monotonic() < deadline and running.poll() is None, running.communicate()[0][-3000:]
        time.sleep(0.1)
    refused = subprocess.run(snakemake(second), env=env, capture_output=True, text=True, timeout=300)
    out, _ = running.communicate(timeout=600)
    assert running.returncode == 0, out[-3000:]
    assert refused.returncode != 0 and running.pid and "rule trial:" not in refused.stdout + refused.stderr
    assert (f"{results / 'smoke'} is being written by the workflow of another checkout (checkout {first}, "
            f"pid {running.pid})") in refused.stdout + refused.stderr
    trials = sorted((results / "smoke" / "wlanshort").glob("*/trial-*"))
    assert len(trials) == 4 and "were not present when the DAG was created" not in out
    made = {t: (t / "summary.json").stat().st_mtime_ns for t in trials}
    again = subprocess.run(snakemake(second), env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stderr[-3000:]
    assert {t: (t / "summary.json").stat().st_mtime_ns for t in trials} == made


def test_after_a_kill_9_the_plan_counts_the_trial_snakemake_reruns(tmp_path: Path) -> None:
    """A `kill -9` of Snakemake leaves its running trial's runner going: the runner finishes the
    trial, but Snakemake's record still marks the job incomplete, so the next run (rerun-incomplete)
    measures it again. The plan must count that trial, as every trial job the run starts: it once
    looked only for a summary.json and said "0 trials to run"."""
    results = tmp_path / "results"
    env = wlanshort_env(tmp_path, trials=1)
    # A working folder of its own: the kill leaves Snakemake's lock there, and --unlock clears only that.
    view = checkout_view(tmp_path / "checkout")
    cmd = [SNAKEMAKE, "--cores", "1", "--directory", str(view), "--snakefile", str(CHECKOUT / "Snakefile"),
           "--config", "papers=[wlanshort]", f"results={results}", f"figures={tmp_path / 'figures'}",
           "profile=smoke", "cells=dl2-ul2-fifo"]
    trial = results / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-1"
    # Its own process group: the runner outlives Snakemake there, and the test waits for the group to empty.
    running = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not trial.with_name("trial-1.partial").exists():      # the runner measures
            assert time.monotonic() < deadline and running.poll() is None, "the trial never started"
            time.sleep(0.05)
        running.kill()
        running.wait()
        while _group_alive(running.pid):                               # the orphaned runner finishes
            assert time.monotonic() < deadline, "the orphaned runner did not end"
            time.sleep(0.2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.pid, signal.SIGKILL)
    assert (trial / "summary.json").is_file(), "the orphaned runner did not finish its trial"

    subprocess.run([*cmd, "--unlock"], env=env, capture_output=True, check=True, timeout=120)
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    out = again.stdout + again.stderr
    planned = re.search(r"^\[plan\] profile smoke: (\d+) trials to run", out, re.M)
    ran = len(re.findall(r"^(?:local)?rule trial:", out, re.M))
    assert ran == 1, f"the scenario did not recur: Snakemake ran {ran} trial jobs\n{out[-3000:]}"
    assert planned and int(planned.group(1)) == ran, out[-3000:]
    assert "[progress] 1/1 trials done" in out


def fresh_checkout(where: Path) -> Path:
    """A copy of this checkout's files as a fresh clone has them: no build/ (no compiled model),
    no .snakemake (no record of any job), no results."""
    skip = {".git", ".snakemake", ".venv", "results", "figures", "build", "data", ".mypy_cache", ".ruff_cache",
            ".pytest_cache"}
    where.mkdir()
    for entry in CHECKOUT.iterdir():
        if entry.name in skip:
            continue
        if entry.is_dir():
            shutil.copytree(entry, where / entry.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(entry, where / entry.name)
    return where


def test_a_binary_the_run_builds_does_not_remeasure_the_trials_it_finds(tmp_path: Path, monkeypatch) -> None:
    """A machine without the compiled model (a fresh clone after `make restore`) finds finished trials
    with no record of their jobs. The run compiles the model for the trials it adds, and measures
    only those: a binary still to be built once marked every finished trial as updated by another
    job, and Snakemake measured them all again (ancient() spares them only once the binary exists).
    The restored cells' cell.json (archive restore writes them) has no record of its job either:
    the trials the larger profile adds still run (each planned trial is a target of its own)."""
    from archive import trials as archive

    results, data = tmp_path / "results", tmp_path / "data"
    env = wlanshort_env(tmp_path, trials=1)
    monkeypatch.setenv("TCPREPRO_PAPER_DIR", env["TCPREPRO_PAPER_DIR"])

    def snakemake(checkout: Path) -> subprocess.CompletedProcess[str]:
        cmd = [SNAKEMAKE, "--cores", "2", "--directory", str(checkout), "--snakefile", str(checkout / "Snakefile"),
               "--config", "papers=[wlanshort]", f"results={results}", f"figures={tmp_path / 'figures'}",
               "profile=smoke"]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)

    first = snakemake(CHECKOUT)                         # one trial per cell, packed as into data/
    assert first.returncode == 0, first.stderr[-3000:]
    assert len(archive.pack("smoke", ["wlanshort"], results, data)["wlanshort"].done) == 2
    shutil.rmtree(results)
    assert len(archive.restore("smoke", ["wlanshort"], results, data)["wlanshort"].done) == 2
    found = sorted((results / "smoke" / "wlanshort").glob("*/trial-1"))
    made = {t: (t / "summary.json").stat().st_mtime_ns for t in found}

    fresh = fresh_checkout(tmp_path / "clone")
    (tmp_path / "papers" / "wlanshort.yaml").write_text(
        (tmp_path / "papers" / "wlanshort.yaml").read_text().replace("trials: 1}", "trials: 2}"))
    again = snakemake(fresh)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out[-3000:]
    assert (fresh / "build" / "wlan" / "wlan_dcf").is_file(), "the run did not compile the model\n" + out[-4000:]
    ran = sorted(re.findall(r"^\s*wildcards: paper=wlanshort, cell=([\w-]+), k=(\d+)", out, re.M))
    assert ran == [("dl2-ul2-dataack", "2"), ("dl2-ul2-fifo", "2")], out[-3000:]
    assert re.search(r"^\[plan\] profile smoke: 2 trials to run", out, re.M), out[-3000:]
    assert {t: (t / "summary.json").stat().st_mtime_ns for t in found} == made, "a finished trial was measured again"


def _group_alive(pgid: int) -> bool:
    """Whether a live process is left in the group (a zombie an orphan reaper has not reaped holds nothing)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            state, _ppid, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
            if int(group) == pgid and state != "Z":
                return True
    return False


def test_the_workflow_runs_smaller_m_t_first_so_a_proven_run_is_not_simulated_again(tmp_path: Path) -> None:
    """Rule trial's priority (sim/wlan/model.py `priority`): on one core, the M_t = 3, 4, 5 trials of
    one RNG run are started smallest first whatever order they are asked in, so M_t = 5 finds the
    M_t = 4 run, which gave up no frame, finished and is taken from it (testbed/proven_runs.py)."""
    papers, results = PAPERS, tmp_path / "results"
    out = {mt: results / "smoke" / "wlanmt" / f"dl1-ul1-fifo-mt{mt}" / "trial-1" for mt in (3, 4, 5)}
    cmd = [SNAKEMAKE, "--cores", "1", "--directory", str(CHECKOUT), "--snakefile", str(CHECKOUT / "Snakefile"),
           *(str(out[mt]) for mt in (5, 4, 3)),
           "--config", "papers=[wlanmt]", f"results={results}", f"figures={tmp_path / 'figures'}", "profile=smoke"]
    proc = subprocess.run(cmd, env={**os.environ, "TCPREPRO_PAPER_DIR": str(papers)}, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    started = [int(m) for m in re.findall(r"cell=dl1-ul1-fifo-mt(\d), k=1", proc.stdout + proc.stderr)]
    assert started == [3, 4, 5], started
    derived = json.loads((out[5] / "provenance.json").read_text()).get("derived")
    assert derived is not None and derived["from"] == "dl1-ul1-fifo-mt4/trial-1"
    assert "derived" not in json.loads((out[4] / "provenance.json").read_text())
