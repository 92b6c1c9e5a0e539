"""`tcprepro trial --out` writes and replaces only the trial's own folder (testbed/trial_dir.py): any
other folder is refused in one line before anything is built, written or deleted. Runs the real
command on the short simulated paper; every case is refused before the model would run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from configuration import CHECKOUT
from testbed import trial_dir

PAPERS = CHECKOUT / "tests" / "data" / "papers"


def trial(out: Path, k: int = 3) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TCPREPRO_PAPER_DIR": str(PAPERS)}
    return subprocess.run([sys.executable, "-m", "tcprepro", "trial", "--paper", "wlanshort", "--cell", "dl2-ul2-fifo",
                           "--trial", str(k), "--profile", "smoke", "--out", str(out)],
                          cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=120)


def finished(folder: Path, cell: str = "dl2-ul2-fifo", k: int = 1) -> Path:
    folder.mkdir(parents=True)
    (folder / "spec.json").write_text(json.dumps({"paper": "wlanshort", "cell": cell, "trial": k, "profile": "smoke"}))
    (folder / "summary.json").write_text("{}")
    return folder


def listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"" for p in sorted(root.rglob("*"))}


def refused(proc: subprocess.CompletedProcess[str], says: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert says in lines[0] and "Fix:" in lines[0] and "nothing" in lines[0], lines[0]


def test_the_cell_folder_is_refused_and_its_trials_stay(tmp_path: Path) -> None:
    """The documented command without its /trial-3: the cell's folder, its other trials, cell.json."""
    cell = tmp_path / "results" / "smoke" / "wlanshort" / "dl2-ul2-fifo"
    finished(cell / "trial-1")
    (cell / "cell.json").write_text("{}")
    before = listing(tmp_path)
    refused(trial(cell), "not the folder of trial 3 of wlanshort/dl2-ul2-fifo")
    assert listing(tmp_path) == before


@pytest.mark.parametrize("where", ["elsewhere", "elsewhere/trial-3", "smoke/wlanshort/other-cell/trial-3",
                                   "smoke/otherpaper/dl2-ul2-fifo/trial-3", "smoke/wlanshort/dl2-ul2-fifo/trial-03"])
def test_a_folder_of_another_shape_is_refused(tmp_path: Path, where: str) -> None:
    out = tmp_path / where
    out.mkdir(parents=True)
    (out / "precious.txt").write_text("mine")
    before = listing(tmp_path)
    refused(trial(out), "not the folder of trial 3")
    assert listing(tmp_path) == before


def test_another_trial_at_the_right_path_is_refused(tmp_path: Path) -> None:
    """A folder of the right name that holds another cell's trial, or anything unfinished."""
    out = finished(tmp_path / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-3", cell="dl2-ul2-dataack", k=3)
    before = listing(tmp_path)
    refused(trial(out), "holds something other than a finished trial 3 of wlanshort/dl2-ul2-fifo")
    (out / "summary.json").unlink()
    (out / "spec.json").write_text("not json")
    refused(trial(out), "holds something other than a finished trial 3")
    assert set(listing(tmp_path)) == set(before) - {str((out / "summary.json").relative_to(tmp_path))}


def test_a_link_is_judged_by_where_it_points(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    out = tmp_path / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-3"
    out.parent.mkdir(parents=True)
    out.symlink_to(precious)
    refused(trial(out), "not the folder of trial 3")
    assert (precious / "keep.txt").read_text() == "mine" and out.is_symlink()


def test_a_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-3"
    out.parent.mkdir(parents=True)
    out.write_text("mine")
    refused(trial(out), "is a file")
    assert out.read_text() == "mine"


def test_a_trial_number_below_one_is_refused(tmp_path: Path) -> None:
    refused(trial(tmp_path / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-0", k=0), "not the folder of trial 0")
    assert not any(tmp_path.iterdir())


def test_the_rename_replaces_only_the_folder_it_may(tmp_path: Path) -> None:
    """A finished trial that appeared while a run measured is kept, that run's partial discarded by
    its caller; the folder the run was asked to replace, or an empty one, is replaced."""
    final = finished(tmp_path / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-1")
    partial = tmp_path / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-1.partial"
    partial.mkdir()
    (partial / "summary.json").write_text('{"new": true}')
    with pytest.raises(trial_dir.TakenMeanwhile):
        trial_dir.install(partial, final, None)
    assert (final / "summary.json").read_text() == "{}" and partial.exists()
    trial_dir.install(partial, final, trial_dir.fingerprint(final))
    assert json.loads((final / "summary.json").read_text()) == {"new": True} and not partial.exists()
    empty = tmp_path / "empty" / "trial-1"
    empty.mkdir(parents=True)
    partial.mkdir()
    trial_dir.install(partial, empty, None)
    assert not partial.exists() and empty.is_dir()


def test_a_partial_folder_whose_writer_lives_is_not_cleared(tmp_path: Path) -> None:
    from testbed import cleanup

    partial = tmp_path / "trial-1.partial"
    partial.mkdir()
    cleanup.claim(partial)                      # this very process: alive
    with pytest.raises(trial_dir.Refused, match="a live process still writes it"):
        trial_dir.clear_partial(partial)
    assert partial.is_dir()
    (partial / cleanup.OWNER_FILE).write_text("999999999 1 " + cleanup.machine_id())
    trial_dir.clear_partial(partial)
    assert not partial.exists()
