"""Bad input stops `snakemake` before any trial: one line naming the field, its file (and cell) and
the fix, and nothing written. Runs the real workflow (no root, no trial ever starts)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.integration.conftest import CHECKOUT

SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
COLLATERAL = CHECKOUT / "config" / "collateral.yaml"


def run(tmp_path: Path, *config: str, papers: Path | None = None, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TCPREPRO_PAPER_DIR"} | env_extra
    if papers:
        env["TCPREPRO_PAPER_DIR"] = str(papers)
    cmd = [SNAKEMAKE, "--cores", "1", "--directory", str(CHECKOUT), "--snakefile", str(CHECKOUT / "Snakefile"),
           "--config", f"results={tmp_path / 'results'}", f"figures={tmp_path / 'figures'}", *config]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = (proc.stdout + proc.stderr).splitlines()
    return next(lines[i + 1] for i, line in enumerate(lines) if line.startswith("WorkflowError"))


@pytest.mark.parametrize(("config", "says"), [
    (["papres=[wlan]", "papers=[wlan]"], "unknown key 'papres' (did you mean 'papers'?)"),
    (["vm_lanes=-3"], "field 'vm_lanes': -3 is less than the minimum of 1"),
    (["max_attempts=-1"], "field 'max_attempts': -1"),
    (["max_attempts=0"], "field 'max_attempts': 0"),
    (["max_attempts=abc"], "field 'max_attempts': 'abc' is not of type 'integer'"),
    (["profile=medium"], "field 'profile': 'medium' is not one of"),
])
def test_a_bad_workflow_value_stops_the_run_before_any_trial(tmp_path: Path, config: list[str], says: str) -> None:
    proc = run(tmp_path, *config)
    assert proc.returncode != 0
    assert says in error_line(proc) and "config/workflow.yaml" in error_line(proc)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists() and not (tmp_path / "figures").exists()


def paper_dir(tmp_path: Path, mutate) -> Path:
    papers = tmp_path / "papers"
    papers.mkdir()
    data = yaml.safe_load(COLLATERAL.read_text())
    mutate(data)
    (papers / "collateral.yaml").write_text(yaml.safe_dump(data))
    return papers


@pytest.mark.parametrize(("mutate", "says"), [
    (lambda d: d["scenario"]["bottleneck"]["forward"].update(rate_kbit=0), "forward.rate_kbit': 0"),
    (lambda d: d["scenario"]["bottleneck"]["forward"].update(limit_bytes=1000), "forward.limit_bytes': 1000"),
    (lambda d: d["matrix"].update(flows=[70]), "cell newreno-rtt50-f70: scenario.flows: 70 bulk flows"),
    (lambda d: d.update(cell_id="${cc};touch PWNED;-${rtt_ms}-${flows}"), "field 'cell_id'"),
    (lambda d: d["matrix"].update(cc=["cubic;touch PWNED"]), "field 'matrix.cc[0]'"),
    (lambda d: d["scenario"]["sysctls"].update({"net.ipv4.tcp_ecn": "1; touch PWNED"}), "sysctls.net.ipv4.tcp_ecn"),
])
def test_a_bad_paper_value_stops_the_run_and_nothing_runs(tmp_path: Path, mutate, says: str) -> None:
    papers = paper_dir(tmp_path, mutate)
    proc = run(tmp_path, "papers=[collateral]", "profile=smoke", papers=papers)
    assert proc.returncode != 0
    line = error_line(proc)
    assert line.startswith(str(papers / "collateral.yaml")) and says in line
    assert not (tmp_path / "results").exists() and not list(tmp_path.rglob("PWNED"))


@pytest.mark.parametrize(("where", "says"), [
    ("results=/", "field 'results': '/' (/) is the file system's root"),
    ("figures=/etc/tcprepro", "field 'figures': '/etc/tcprepro' (/etc/tcprepro) is inside the system folder /etc"),
    ("results={home}", "is your home folder itself"),
    ("results={tmp}/mine", "holds files that are not this project's (thesis.tex)"),
    ("figures={tmp}/link", "(" + "{tmp}/mine) holds files that are not this project's"),
])
def test_a_results_or_figures_folder_that_is_not_the_project_s_stops_the_run(tmp_path: Path, where: str,
                                                                              says: str) -> None:
    """Snakemake removes outputs before remaking them: / , $HOME, a system folder or a folder of
    others' files (also through a link) is refused at load, in one line (configuration/folders.py)."""
    home, mine = tmp_path / "home", tmp_path / "mine"
    for folder in (home, mine):
        folder.mkdir()
    (mine / "thesis.tex").write_text("mine")
    (tmp_path / "link").symlink_to(mine)
    # --dry-run: a workflow that let such a folder through would plan a run, not write there
    proc = run(tmp_path, "papers=[wlan]", where.format(home=home, tmp=tmp_path), "--dry-run", HOME=str(home))
    assert proc.returncode != 0
    assert says.format(tmp=tmp_path) in error_line(proc) and "Fix:" in error_line(proc)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    assert {p.name for p in home.iterdir()} <= {".cache"}         # Snakemake's own cache, nothing of a run
    assert not (tmp_path / "results").exists() and not (tmp_path / "figures").exists()


def test_an_empty_folder_and_one_a_run_wrote_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "old" / "quick").mkdir(parents=True)
    for where in ("results={tmp}/empty", "results={tmp}/old"):
        proc = run(tmp_path, "papers=[wlan]", where.format(tmp=tmp_path), "--dry-run")
        assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize(("env", "says"), [
    ({"TCPREPRO_KERNEL": "bogus"}, "TCPREPRO_KERNEL='bogus': choose one of auto, host, vm, uml"),
    ({"TCPREPRO_UML_MEMORY": "1G init=/bin/sh"}, "TCPREPRO_UML_MEMORY='1G init=/bin/sh': give the guest's memory"),
    ({"TCPREPRO_UML_MEMORY": "99999999G"}, "give the guest's memory as 256M to 64G"),
    ({"TCPREPRO_UML_STALL_S": "nan"}, "TCPREPRO_UML_STALL_S='nan': give a positive number of seconds"),
    ({"TCPREPRO_UML_USERSPACE": "/nonexistent"}, "TCPREPRO_UML_USERSPACE='/nonexistent': give the absolute path"),
])
def test_a_bad_environment_variable_stops_the_run_and_the_trial_in_one_line(
        tmp_path: Path, env: dict[str, str], says: str) -> None:
    proc = run(tmp_path, "papers=[westwood]", "--dry-run", **env)
    assert proc.returncode != 0 and says in error_line(proc)
    assert "Traceback" not in proc.stdout + proc.stderr
    out = tmp_path / "r" / "westwood" / "cubic-t1" / "trial-1"
    trial = subprocess.run([sys.executable, "-m", "tcprepro", "trial", "--paper", "westwood", "--cell", "cubic-t1",
                            "--trial", "1", "--profile", "quick", "--out", str(out)], cwd=CHECKOUT,
                           env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert trial.returncode == 2 and trial.stderr.strip().splitlines() == [trial.stderr.strip()]
    assert trial.stderr.startswith("error: ") and says in trial.stderr and not out.parent.exists()
