"""A real-time trial whose last attempt failed its fidelity checks is measured again by the next run.

The failed trial stays in place (its cell counts it as invalid) and a copy of every attempt's records
goes to a hidden sibling, `.trial-K.earlier/1..N`, which Snakemake does not remove when it reruns the
trial. The trial rule's `retry` parameter (`retry_key`) tells Snakemake when to rerun: it is the
number of attempts a run carries in, so it changes exactly when a real-time trial ends invalid, and
a rerun then records the value its result reports. Virtual-time and simulated trials are
deterministic (a rerun repeats the failure): they are not retried.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from testbed.lane.base import Lane

RECORDS = ("summary.json", "provenance.json", "trial.log", "spec.json")


def earlier_dir(final_dir: Path) -> Path:
    return final_dir.with_name(f".{final_dir.name}.earlier")


def earlier_attempts(final_dir: Path) -> list[Path]:
    """The earlier runs' attempts of this trial, oldest first."""
    folder = earlier_dir(final_dir)
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))


def _summary(final_dir: Path) -> dict | None:
    try:
        return json.loads((final_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return None


def to_retry(valid: bool, lane: Lane) -> bool:
    """An invalid trial of a real-time lane, where an attempt's outcome depends on the host's timing."""
    return not valid and not lane.deterministic


def retry_key(final_dir: Path) -> str:
    """The attempts the trial's next run carries in: for an invalid real-time trial all it has made
    (so the key changes and Snakemake reruns it), else what its last run carried in (unchanged)."""
    summary = _summary(final_dir)
    if summary is None:
        return str(len(earlier_attempts(final_dir)))
    if summary.get("retry_next_run"):
        return str(int(summary.get("attempt", 1)))
    return str(int(summary.get("earlier_attempts", 0)))


def keep_for_retry(final_dir: Path) -> None:
    """Copy every attempt of an invalid trial (its invalid-attempts/ and the final one) to the hidden
    sibling, replacing it whole, for the next run to carry in."""
    target = earlier_dir(final_dir)
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    invalid = final_dir / "invalid-attempts"
    previous = sorted((p for p in invalid.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)) \
        if invalid.is_dir() else []
    for i, attempt in enumerate(previous, 1):
        shutil.copytree(attempt, tmp / str(i))
    last = tmp / str(len(previous) + 1)
    last.mkdir()
    for name in RECORDS:
        if (final_dir / name).exists():
            shutil.copy2(final_dir / name, last / name)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def forget(final_dir: Path) -> None:
    shutil.rmtree(earlier_dir(final_dir), ignore_errors=True)
