"""The Snakemake workflow end to end on the host kernel (TCPREPRO_KERNEL=host): aggregation,
progress, resume, rejection."""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archive import trials as archive
from configuration.load import load_workflow
from experiments import load_paper
from tests.integration.conftest import CHECKOUT

pytestmark = pytest.mark.root
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def snakemake(env, results: Path, profile: str, *extra: str, **kw) -> list[str]:
    return [SNAKEMAKE, "--cores", "1", "--directory", str(CHECKOUT), "--snakefile", str(CHECKOUT / "Snakefile"),
            "--config", "papers=[hostnet]", f"results={results}", f"profile={profile}", *extra]


def test_smoke_workflow_aggregates_and_resumes(tmp_path, host_env, nothing_left_behind):
    paper_env = host_env
    results = tmp_path / "results"
    proc = subprocess.run(snakemake(paper_env, results, "smoke"), env=paper_env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "[plan] profile smoke: 1 trials to run" in out
    assert "[progress] 1/1 trials done" in out
    cell = json.loads((results / "smoke" / "hostnet" / "r1000" / "cell.json").read_text())
    assert cell["complete"] and cell["n_valid"] == 1
    assert cell["metrics"]["goodput_kbit_s"]["n"] == 1
    again = subprocess.run(snakemake(paper_env, results, "smoke"), env=paper_env, capture_output=True, text=True,
                           timeout=120)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_interrupted_workflow_does_not_redo_finished_trials(tmp_path, host_env, nothing_left_behind):
    """A trial finished before the interrupt is kept; only one the real-time lane left for a retry
    (its checks failed on a loaded host: testbed/attempts.py) is measured again, once more."""
    paper_env = host_env
    results = tmp_path / "results"
    # One lane: trials finish one by one, so an interrupt lands with trials still to run.
    # SIGINT as a terminal delivers it, even when this test runs in the background (where the
    # shell leaves SIGINT ignored, and Python then installs no KeyboardInterrupt handler).
    proc = subprocess.Popen(snakemake(paper_env, results, "quick", "--resources", "trial_lanes=1"), env=paper_env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    done: dict[Path, dict] = {}
    kept: list[Path] = []
    # Snakemake picks the order: take whichever ends first, and wait for one not left for a retry
    # while at least half of the six trials are still to run.
    while not kept and len(done) < 3 and time.monotonic() < deadline:
        for summary in (results / "quick" / "hostnet").glob("*/trial-*/summary.json"):
            if summary not in done:
                with contextlib.suppress(OSError, ValueError):
                    done[summary] = json.loads(summary.read_text())
        kept = [s for s, rec in done.items() if not rec["retry_next_run"]]
        time.sleep(0.2)
    assert done, "no trial finished"
    time.sleep(3)                         # the next trial is now mid-traffic
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert not list(results.rglob("*.partial")), "an interrupted trial left a partial directory"
    mtimes = {s: s.stat().st_mtime for s in done}
    resumed = subprocess.run(snakemake(paper_env, results, "quick"), env=paper_env, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    for summary, before in done.items():
        if before["retry_next_run"]:
            after = json.loads(summary.read_text())
            assert after["attempt"] > before["attempt"], f"{summary}: left for a retry, not measured again"
        else:
            assert summary.stat().st_mtime == mtimes[summary], f"{summary}: a finished trial was run again"
    planned = re.search(r"(\d+) trials to run", resumed.stdout + resumed.stderr)
    assert planned and 1 <= int(planned.group(1)) < 6, "the resumed run plans only what is not done"
    # every trial measured and aggregated; complete where all three are valid (a loaded host's
    # trial can still fail its real-time checks on every attempt: it is counted, not hidden)
    for cell in ("r1000", "r2000"):
        cell_dir = results / "quick" / "hostnet" / cell
        trials = [json.loads(f.read_text()) for f in cell_dir.glob("trial-*/summary.json")]
        agg = json.loads((cell_dir / "cell.json").read_text())
        assert len(trials) == 3 and agg["n_valid"] == sum(t["valid"] for t in trials)
        assert agg["complete"] == (agg["n_valid"] == 3)
    if not kept:
        pytest.skip("every trial finished before the interrupt failed its real-time checks (a loaded host), "
                    f"so none could show that a kept trial stays: {[str(s) for s in done]}")


def test_bad_config_stops_the_workflow_before_any_trial(tmp_path, paper_env):
    bad = tmp_path / "papers"
    bad.mkdir()
    text = (Path(paper_env["TCPREPRO_PAPER_DIR"]) / "hostnet.yaml").read_text()
    (bad / "hostnet.yaml").write_text(text.replace("trials: 3", "trials: three", 1))
    results = tmp_path / "results"
    env = {**paper_env, "TCPREPRO_PAPER_DIR": str(bad)}
    proc = subprocess.run(snakemake(env, results, "quick"), env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "profiles.quick.trials" in proc.stdout + proc.stderr
    assert not results.exists()


def test_restored_trials_are_not_run_again(tmp_path, host_env, nothing_left_behind):
    paper_env = host_env
    """Trials packed into data/ and restored on an empty machine count as done: restore aggregates
    their cells as the workflow would (archive/trials.py, `make restore`), and the workflow runs no
    trial again."""
    results, data = tmp_path / "results", tmp_path / "data"
    first = subprocess.run(snakemake(paper_env, results, "smoke"), env=paper_env, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    cell = results / "smoke" / "hostnet" / "r1000" / "cell.json"
    before = json.loads(cell.read_text())
    assert archive.pack("smoke", ["hostnet"], results, data)["hostnet"].done == ["r1000/trial-1"]
    shutil.rmtree(results)                                    # the machine restarts empty
    restored = archive.restore("smoke", ["hostnet"], results, data)["hostnet"]
    assert restored.done == ["r1000/trial-1"] and restored.aggregated == ["r1000"]
    assert json.loads(cell.read_text())["metrics"] == before["metrics"]
    again = subprocess.run(snakemake(paper_env, results, "smoke"), env=paper_env, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    out = again.stdout + again.stderr
    assert "Nothing to be done" in out and "rule trial" not in out, out[-3000:]
    assert json.loads(cell.read_text())["metrics"] == before["metrics"]


def test_simulated_and_virtual_time_trials_take_a_core_and_no_lane(tmp_path):
    """ns-3 runs and UML guests keep a core busy and share nothing: with one lane (the VM's limit)
    they must still run side by side, while real-time trials keep to the lanes. What a cluster job
    would ask for follows config/workflow.yaml `cluster` (minutes: floor + duration x factor)."""
    def planned_resources(paper: str, lane: str | None = None) -> set[str]:
        cmd = [SNAKEMAKE, "--dry-run", "--nolock", "--cores", "2", "--directory", str(CHECKOUT),
               "--snakefile", str(CHECKOUT / "Snakefile"), "--config", f"papers=[{paper}]",
               f"results={tmp_path}", "profile=smoke"]
        env = {k: v for k, v in os.environ.items() if k not in ("TCPREPRO_PAPER_DIR", "TCPREPRO_KERNEL")}
        if lane:
            env["TCPREPRO_KERNEL"] = lane
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        jobs = re.split(r"\n(?=(?:local)?rule \w+:)", proc.stdout + proc.stderr)
        # Snakemake adds mem and mem_mib (mem_mb in other units): left out.
        return {re.sub(r", mem=[^,]*, mem_mib=\d+", "", m.group(1))
                for j in jobs if re.match(r"(?:local)?rule trial:", j)
                for m in [re.search(r"resources: (.*)", j)] if m}

    def runtime(virtual_s: float, attempts: int = 1) -> int:
        c = load_workflow()["cluster"]
        return c["runtime_floor_min"] + math.ceil(virtual_s * c["wall_s_per_virtual_s"] * attempts / 60)

    mem = load_workflow()["cluster"]["mem_mb"]
    attempts = load_workflow()["max_attempts"]
    smoke = {p: load_paper(p).profile("smoke")["duration_s"] for p in ("wlan", "westwood")}
    sim, uml = runtime(smoke["wlan"]), runtime(smoke["westwood"])
    vm = runtime(smoke["westwood"], attempts)
    assert planned_resources("wlan") == {f"tmpdir=/tmp, trial_lanes=0, runtime={sim}, mem_mb={mem['sim']}"}
    assert planned_resources("westwood", "uml") == {f"tmpdir=/tmp, trial_lanes=0, runtime={uml}, mem_mb={mem['uml']}"}
    assert planned_resources("westwood", "vm") == {f"tmpdir=/tmp, trial_lanes=1, runtime={vm}, mem_mb={mem['uml']}"}


def test_config_cells_selects_the_trials_to_run(tmp_path):
    """`--config cells=...` (scripts/reference-run's chunks) names the trials to run; the plan counts
    the same trial_dirs (a dry run prints no plan: onstart does not run)."""
    cells = "dl1-ul1-fifo-q100-mt1,dl1-ul1-fifo-q100-mt2"
    cmd = [SNAKEMAKE, "--dry-run", "--nolock", "--cores", "2", "--directory", str(CHECKOUT),
           "--snakefile", str(CHECKOUT / "Snakefile"), "--config", "papers=[wlan]", f"results={tmp_path}",
           "profile=quick", f"cells={cells}"]
    env = {k: v for k, v in os.environ.items() if k != "TCPREPRO_PAPER_DIR"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert re.search(r"^trial\s+2$", out, re.M), out[-2000:]
    assert sorted(re.findall(r"cell=(dl[\w-]+), k=1", out)) == sorted(cells.split(","))


def test_an_alternative_leaves_the_cells_no_claim_reads_unmeasured(tmp_path):
    """Under wlan's shared scheduler queues the ACK-queue sensitivity cell is named unread (no claim
    reads it): the plan measures the twin of the cell beside it and not its own."""
    cells = "dl2-ul2-dataack-q100-mt1,dl2-ul2-dataack-ackq1000-q100-mt1"
    cmd = [SNAKEMAKE, "--dry-run", "--nolock", "--cores", "2", "--directory", str(CHECKOUT),
           "--snakefile", str(CHECKOUT / "Snakefile"), "--config", "papers=[wlan]", f"results={tmp_path}",
           f"figures={tmp_path / 'figures'}", "profile=full", f"cells={cells}", "robustness=scheduler_queues.shared"]
    env = {k: v for k, v in os.environ.items() if k != "TCPREPRO_PAPER_DIR"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    planned = set(re.findall(r"cell=(dl[\w+.-]+), k=1", proc.stdout + proc.stderr))
    assert planned == {*cells.split(","), "dl2-ul2-dataack-q100-mt1+scheduler_queues.shared"}, planned


def test_a_paper_that_cannot_run_on_its_lane_stops_the_plan_with_the_fix(tmp_path):
    """A cell that its lane cannot run stops the workflow at load, before any job, with the lane's
    lack and the fix: never a silent move to another lane, never a failed trial per cell. Here the
    host lane, forced, for Collateral Damage's H-TCP (a kernel without tcp_htcp, as DESIGN.md's)."""
    from testbed import placement
    if placement.plan("collateral", "smoke", mode="host").runnable:
        pytest.skip("this host kernel runs every Collateral Damage cell: nothing to refuse")
    cmd = [SNAKEMAKE, "--dry-run", "--nolock", "--cores", "2", "--directory", str(CHECKOUT),
           "--snakefile", str(CHECKOUT / "Snakefile"), "--config", "papers=[collateral]",
           f"results={tmp_path / 'results'}", f"figures={tmp_path / 'figures'}", "profile=smoke"]
    env = {k: v for k, v in os.environ.items() if k != "TCPREPRO_PAPER_DIR"} | {"TCPREPRO_KERNEL": "host"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    assert "[plan] collateral: cannot run: TCPREPRO_KERNEL=host" in out and "Fix:" in out, out[-2000:]
    assert "rule trial" not in out and "Traceback" not in out, out[-2000:]


def test_a_workflow_profile_keeps_its_settings_beside_config_and_refuses_to_lose_them(tmp_path):
    """`--workflow-profile profiles/full --config papers=[wlan]` runs the full profile (Snakemake
    replaces a profile's `config:` list, so ours set their keys as a config file); a command-line
    `--configfile` that replaces the profile's stops the run in one line naming the key and the fix."""
    base = [SNAKEMAKE, "--dry-run", "--nolock", "--cores", "2", "--directory", str(CHECKOUT), "--snakefile",
            str(CHECKOUT / "Snakefile"), "--workflow-profile", str(CHECKOUT / "profiles" / "full")]
    rest = ["--config", "papers=[wlan]", f"results={tmp_path / 'results'}", f"figures={tmp_path / 'figures'}"]
    env = {k: v for k, v in os.environ.items() if k != "TCPREPRO_PAPER_DIR"}
    kept = subprocess.run([*base, *rest], env=env, capture_output=True, text=True, timeout=300)
    assert kept.returncode == 0, kept.stderr[-3000:]
    planned = re.findall(r"--profile (\w+) --out", kept.stdout + kept.stderr)
    assert planned and set(planned) == {"full"}, set(planned)
    lost = subprocess.run([*base, "--configfile", str(CHECKOUT / "config" / "workflow.yaml"), *rest], env=env,
                          capture_output=True, text=True, timeout=300)
    out = lost.stdout + lost.stderr
    assert lost.returncode != 0 and "sets profile=full" in out and "fix: add --config profile=full" in out, out[-2000:]
    assert "Traceback" not in out and "--profile quick" not in out
