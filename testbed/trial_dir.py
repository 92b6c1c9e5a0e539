"""What a trial's runner may write and delete: its own folder, and nothing else (docs/threat-model.md).

`tcprepro trial --out` names <results>/<profile>/<paper>/<cell>/trial-<k>. Before anything is
written or deleted, that path must have this shape for the trial being run, and hold nothing or a
finished trial of that very trial: a cell's folder, a foreign one or another trial is refused, never
replaced. One runner at a time writes a trial (an flock on <cell>/.trial-<k>.lock, held from before
its partial folder is cleared until the rename), so two runs of one trial, from two checkouts
sharing a results folder say, never delete each other's work: the one that waited keeps the trial
the other finished. At the rename, a folder in place is replaced only when it is the one this run
was asked to replace or its own earlier attempt.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from testbed import cleanup

TRIAL_NAME = re.compile(r"trial-[1-9][0-9]*")
# What identifies a finished trial folder at one moment: its inode, and its summary's size and
# mtime (rewritten when the runner adds the attempts' count after the rename).
Fingerprint = tuple[int, int, int, int]


class Refused(ValueError):
    """An --out the runner will not write: the message is one line, the problem and the fix."""


class TakenMeanwhile(RuntimeError):
    """Another run finished this trial while this one measured: its folder is kept, this one's result
    discarded."""


def shape(spec: dict[str, Any]) -> str:
    """The --out a trial spec asks for, as the error messages print it."""
    return f"<results>/{spec['profile']}/{spec['paper']}/{spec['cell']}/trial-{spec['trial']}"


def check_out(out: Path, spec: dict[str, Any]) -> Path:
    """The resolved trial folder `out` names, or Refused when it is not this trial's folder (the
    shape above) or holds anything but a finished trial of this same trial."""
    path = out.resolve()
    paper, cell, k = spec["paper"], spec["cell"], spec["trial"]
    fix = f"give --out {shape(spec)}"
    if int(k) < 1 or [path.parent.parent.name, path.parent.name, path.name] != [paper, cell, f"trial-{k}"]:
        raise Refused(f"--out {out}: not the folder of trial {k} of {paper}/{cell}; nothing written or deleted. "
                      f"Fix: {fix}")
    if path.exists() and not path.is_dir():
        raise Refused(f"--out {out}: is a file, not a trial folder; nothing written or deleted. Fix: {fix}")
    if path.is_dir() and any(path.iterdir()) and not is_finished(path, spec):
        raise Refused(f"--out {out}: holds something other than a finished trial {k} of {paper}/{cell} "
                      f"(profile {spec['profile']}): refused, nothing deleted. Fix: remove it yourself if it is "
                      "disposable, or write the trial under another results folder")
    return path


def is_finished(folder: Path, spec: dict[str, Any]) -> bool:
    """A finished trial of the trial `spec` describes: its spec.json names the same paper, cell,
    trial and profile, and its summary.json is there."""
    try:
        ran = json.loads((folder / "spec.json").read_text())
    except (OSError, ValueError):
        return False
    same = all(isinstance(ran, dict) and ran.get(k) == spec[k] for k in ("paper", "cell", "trial", "profile"))
    return same and (folder / "summary.json").is_file()


def fingerprint(folder: Path) -> Fingerprint | None:
    """None when nothing is there (or an empty folder, which a rename replaces as it is); else what
    tells this folder from any other put there later. A link is never ours: its own inode."""
    try:
        st = folder.lstat()
    except FileNotFoundError:
        return None
    if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        return None
    try:
        summary = (folder / "summary.json").stat()
        return st.st_dev, st.st_ino, summary.st_size, summary.st_mtime_ns
    except OSError:
        return st.st_dev, st.st_ino, -1, -1


def lock_path(final_dir: Path) -> Path:
    return final_dir.with_name(f".{final_dir.name}.lock")


@contextlib.contextmanager
def exclusive(final_dir: Path) -> Iterator[None]:
    """Hold this trial's lock; a second runner of the same trial says whom it waits for, and waits.
    An flock: a killed holder frees it."""
    final_dir.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(final_dir), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            print(f"{final_dir}: another run writes this trial ({holder}); waiting for it", file=sys.stderr)
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {cleanup.machine_id()}".encode(), 0)
        yield
    finally:
        os.close(fd)


def clear_partial(partial: Path) -> None:
    """Remove a partial folder left by a runner that is gone (the caller holds the trial's lock); one
    whose writer still runs, or anything that is not a plain folder, is refused."""
    if not partial.exists() and not partial.is_symlink():
        return
    if partial.is_symlink() or not partial.is_dir():
        raise Refused(f"{partial}: not a folder a runner wrote; nothing deleted. Fix: remove it yourself")
    if cleanup.owner_alive(partial):
        raise Refused(f"{partial}: a live process still writes it; nothing deleted. Fix: wait for it, or stop it")
    shutil.rmtree(partial)


def install(partial: Path, final_dir: Path, may_replace: Fingerprint | None) -> None:
    """Rename the finished `partial` into place. Something already there is replaced only when it is
    the folder this run may replace (`may_replace`: the one it was asked to, or its own earlier
    attempt); anything else is kept and TakenMeanwhile raised."""
    there = fingerprint(final_dir)
    if there is not None and there != may_replace:
        raise TakenMeanwhile("finished by another run while this one measured: kept it, this run's result "
                             "discarded")
    if there is not None:
        shutil.rmtree(final_dir)
    partial.rename(final_dir)               # onto nothing, or an empty folder
