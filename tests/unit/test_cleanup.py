"""The stale-partial sweep takes only what a dead writer left: a folder claimed by a live process,
or never claimed (being created right now, or someone else's: an archive restore), stays."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testbed import cleanup


def _partial(results: Path, name: str) -> Path:
    d = results / "full" / "paper" / "cell" / f"{name}.partial"
    d.mkdir(parents=True)
    return d


def _dead_pid() -> str:
    """The pid of a process that has exited."""
    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()


def test_only_folders_of_dead_writers_are_stale(tmp_path: Path) -> None:
    mine = _partial(tmp_path, "trial-1")
    cleanup.claim(mine)
    dead = _partial(tmp_path, "trial-2")
    (dead / cleanup.OWNER_FILE).write_text(f"{_dead_pid()} 1")
    unclaimed = _partial(tmp_path, "trial-3.restore")
    reused = _partial(tmp_path, "trial-4")
    (reused / cleanup.OWNER_FILE).write_text(f"{os.getpid()} 1")     # this pid, another start time
    assert sorted(cleanup.stale_partials(tmp_path)) == sorted([dead, reused])
    assert cleanup.owner_alive(mine) is True and cleanup.owner_alive(unclaimed) is None


def test_a_folder_claimed_on_another_machine_is_left_alone(tmp_path: Path) -> None:
    """On a cluster results/ is shared: a pid written on another node says nothing here, dead or
    alive, so the sweep leaves that folder to its own trial's next run."""
    here = _partial(tmp_path, "trial-1")
    cleanup.claim(here)
    pid = _dead_pid()
    other = _partial(tmp_path, "trial-2")
    (other / cleanup.OWNER_FILE).write_text(f"{pid} 1 node-17/another-boot")
    same_machine_dead = _partial(tmp_path, "trial-3")
    (same_machine_dead / cleanup.OWNER_FILE).write_text(f"{pid} 1 {cleanup.machine_id()}")
    assert cleanup.owner_alive(other) is None and cleanup.owner_alive(here) is True
    assert cleanup.stale_partials(tmp_path) == [same_machine_dead]


def test_the_command_sweeps_the_results_folder_it_is_given(tmp_path: Path) -> None:
    """`tcprepro cleanup --results DIR` (a workflow run with `results=DIR`) sweeps DIR's stale
    partials; a folder that is not there is an error, nothing swept."""
    dead = _partial(tmp_path, "trial-2")
    (dead / cleanup.OWNER_FILE).write_text(f"{_dead_pid()} 1")
    cmd = [sys.executable, "-m", "tcprepro", "cleanup", "--results"]
    out = subprocess.run([*cmd, str(tmp_path)], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and f"partial trial {dead}" in out.stdout and not dead.exists()
    gone = subprocess.run([*cmd, str(tmp_path / "nowhere")], capture_output=True, text=True, check=False)
    assert gone.returncode == 2 and "no such folder" in gone.stderr
