"""scripts/reference-run on a copy of this checkout: chunks of cells through Snakemake, each chunk's
trials packed into data/ and committed, the stop file honoured, a rerun finding nothing to do.

It runs the short simulated paper (tests/data/papers/wlanshort.yaml: two cells of 12 s of ns-3)
with --profile smoke, so it needs no root and no VM, and commits only in its own copy.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sim import build
from tests.integration.conftest import CHECKOUT

pytestmark = pytest.mark.skipif(not build.NS3_HEADER.exists(), reason="needs libns3-dev (make deps)")
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]


@pytest.fixture
def checkout_copy(tmp_path: Path) -> Path:
    """This checkout's tracked files (without data/ and the committed full figures) as a new git
    repository, with the venv linked in and the ns-3 model already compiled."""
    copy = tmp_path / "repo"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=CHECKOUT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if not name or name.startswith("data/") or "/full/" in name or not (CHECKOUT / name).exists():
            continue
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(CHECKOUT / name, copy / name)
    (copy / ".venv").symlink_to(CHECKOUT / ".venv")
    subprocess.run([*GIT, "init", "-q"], cwd=copy, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=copy, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "copy"], cwd=copy, check=True)
    # the model, compiled here once, copied after its sources: Snakemake sees it up to date
    binary = build.ensure("wlan_dcf", log=False).path
    (copy / "build" / binary.parent.name).mkdir(parents=True)
    for f in (binary, binary.with_suffix(".json")):
        shutil.copy(f, copy / "build" / binary.parent.name / f.name)
    return copy


def reference_run(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TCPREPRO_PAPER_DIR": str(copy / "tests" / "data" / "papers"),
           "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}
    return subprocess.run([str(copy / "scripts" / "reference-run"), "wlanshort", "--profile", "smoke", *args],
                          cwd=copy, env=env, capture_output=True, text=True, timeout=600)


def commits(copy: Path) -> list[str]:
    out = subprocess.run(["git", "log", "--format=%s"], cwd=copy, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_chunks_are_packed_and_committed_one_by_one(checkout_copy: Path) -> None:
    copy = checkout_copy
    stop = copy / "results" / ".stop-reference-run"
    stop.parent.mkdir(parents=True)
    stop.touch()
    stopped = reference_run(copy, "--commit")
    assert stopped.returncode == 0, stopped.stderr
    assert "2 of 2 cells to run" in stopped.stdout and "stopped by results/.stop-reference-run" in stopped.stdout
    assert not stop.exists() and not (copy / "results" / "smoke" / "wlanshort" / "dl2-ul2-fifo").exists()

    run = reference_run(copy, "--commit", "--chunk", "1")
    snakemake_log = copy / "results" / "smoke" / "wlanshort.snakemake.log"
    assert run.returncode == 0, run.stderr + snakemake_log.read_text()[-3000:]
    data = copy / "data" / "smoke" / "wlanshort"
    assert sorted(p.relative_to(data).as_posix() for p in data.rglob("*.tar.xz")) == [
        "dl2-ul2-dataack/trial-1.tar.xz", "dl2-ul2-fifo/trial-1.tar.xz"]
    # one commit per chunk, each holding only data/smoke/wlanshort, and nothing left uncommitted there
    assert commits(copy)[:2] == ["data: wlanshort smoke run, 1 packed; 2 of 2 trials archived, 2 of 2 cells complete",
                                 "data: wlanshort smoke run, 1 packed; 1 of 2 trials archived, 1 of 2 cells complete"]
    files = subprocess.run(["git", "show", "--name-only", "--format=", "HEAD"], cwd=copy, capture_output=True,
                           text=True, check=True).stdout.split()
    assert files and all(f.startswith("data/smoke/wlanshort/") for f in files)
    assert subprocess.run(["git", "status", "--porcelain", "--", "data"], cwd=copy, capture_output=True,
                          text=True).stdout == ""
    log = (copy / "results" / "smoke" / "wlanshort.reference-run.log").read_text()
    assert log.count(": rc=0, ") == 2

    again = reference_run(copy, "--commit")
    assert again.returncode == 0 and "0 of 2 cells to run" in again.stdout
    assert len(commits(copy)) == 3                          # the copy's own commit and the two chunks


def test_a_bad_paper_or_profile_is_named(checkout_copy: Path) -> None:
    bad = subprocess.run([str(checkout_copy / "scripts" / "reference-run"), "wlanshort", "--profile", "nosuch"],
                         cwd=checkout_copy, capture_output=True, text=True,
                         env={**os.environ, "TCPREPRO_PAPER_DIR": str(checkout_copy / "tests" / "data" / "papers")})
    assert bad.returncode == 1 and "unknown profile 'nosuch'" in bad.stderr
    assert not (checkout_copy / "data").exists()
