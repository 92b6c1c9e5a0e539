"""Progress the user can follow: trials done out of planned, an estimate of the time left, and at
the end what each paper's trials took.

The workflow writes a plan (every trial it will run, with its traffic duration) when it starts; each
trial appends its wall time and end when it ends. Both files are plain text beside the results.
"""
from __future__ import annotations

import fcntl
import json
import time
from pathlib import Path
from typing import Any


def plan_path(results: Path) -> Path:
    return results / ".plan.json"


def _share(trial: dict[str, Any], lanes: int, cores: int) -> int:
    """How many trials of this one's kind run at once: simulated and virtual-time ones one per core,
    real-time ones one per lane."""
    return cores if trial.get("per_core") else lanes


def write_plan(results: Path, trials: list[dict[str, Any]], lanes: int, cores: int = 1) -> str:
    """trials: [{"dir": ..., "duration_s": ..., "per_core": bool, "bounded": bool}], only those not yet done.

    Real-time trials share `lanes`; simulated and virtual-time ones (a core each, no lane) share
    `cores`, and their duration_s is 0 (their wall time is all CPU, learnt as they finish).
    A bounded trial (fixed-size transfers) ends when its transfers do: duration_s is its upper
    bound, and the running estimate learns the share of it such trials actually take.
    Returns a one-line forecast.
    """
    results.mkdir(parents=True, exist_ok=True)
    # A trial cannot be split: no more lanes (cores) are busy than there are trials of that kind.
    n_sim = sum(1 for t in trials if t.get("per_core"))
    plan = {"created": time.time(), "lanes": max(1, min(lanes, len(trials) - n_sim)),
            "cores": max(1, min(cores, n_sim)), "trials": trials}
    plan_path(results).write_text(json.dumps(plan))
    (results / ".progress.log").write_text("")
    total = sum(t["duration_s"] for t in trials)
    line = f"{len(trials)} trials to run"
    if n_sim < len(trials):
        bound = " at most" if any(t.get("bounded") for t in trials) else ""
        line += (f", {total / 60:.1f} min of traffic{bound}; about {total / plan['lanes'] / 60 * 1.15:.1f} min "
                 f"with {plan['lanes']} lanes")
    if n_sim:
        line += f"; {n_sim} on cores (simulated or virtual time), {plan['cores']} at a time"
    return line + " (plus per-trial set-up, measured as trials finish)"


def record_done(results: Path, trial_dir: str, wall_s: float, traffic_s: float) -> str | None:
    """Append this trial's timing; return the progress line (None when no plan exists)."""
    plan_file = plan_path(results)
    if not plan_file.exists():
        return None
    plan = json.loads(plan_file.read_text())
    log = results / ".progress.log"
    with log.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.write(json.dumps({"dir": trial_dir, "wall_s": wall_s, "traffic_s": traffic_s, "end": time.time()}) + "\n")
    done = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    done_dirs = {d["dir"] for d in done}
    left = [t for t in plan["trials"] if t["dir"] not in done_dirs]
    # Overhead per trial as measured so far, per kind (a per-core trial is all "overhead"), added
    # to each remaining trial's traffic time; a kind not measured yet borrows the other's.
    kind = {t["dir"]: bool(t.get("per_core")) for t in plan["trials"]}
    overhead: dict[bool, float] = {}
    for sim in (False, True):
        walls = [d["wall_s"] - d["traffic_s"] for d in done if kind.get(d["dir"], False) == sim]
        if walls:
            overhead[sim] = sum(walls) / len(walls)
    every = sum(d["wall_s"] - d["traffic_s"] for d in done) / len(done)
    # Bounded trials: the share of their bound that the finished ones took (the whole bound until one has).
    bound_of = {t["dir"]: t["duration_s"] for t in plan["trials"] if t.get("bounded") and t["duration_s"] > 0}
    took = [(d["traffic_s"], bound_of[d["dir"]]) for d in done if d["dir"] in bound_of]
    share = min(1.0, sum(a for a, _ in took) / sum(b for _, b in took)) if took else 1.0
    lanes, cores = plan["lanes"], plan.get("cores", 1)
    eta = sum((t["duration_s"] * (share if t.get("bounded") else 1.0)
               + overhead.get(bool(t.get("per_core")), every)) / _share(t, lanes, cores)
              for t in left)
    return (f"[progress] {len(plan['trials']) - len(left)}/{len(plan['trials'])} trials done, "
            f"about {eta / 60:.1f} min left")


def _clock(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m // 60}:{m % 60:02d}:{s:02d}"


def run_summary(results: Path) -> list[str]:
    """Per paper, what this workflow run measured: its trials, their summed wall time (the cores'
    time they took) and when, counted from the run's start, the first began and the last ended.

    Papers share the cores, so each paper's span overlaps the others'; the summed wall time is what
    a paper costs alone. Read from the run's plan and progress log (rewritten when a run starts);
    an empty list when this run measured nothing.
    """
    plan_file, log = plan_path(results), results / ".progress.log"
    if not plan_file.exists() or not log.exists():
        return []
    start = json.loads(plan_file.read_text())["created"]
    per_paper: dict[str, list[dict[str, Any]]] = {}
    for line in log.read_text().splitlines():
        if line.strip():
            done = json.loads(line)
            if "end" in done:
                per_paper.setdefault(Path(done["dir"]).parent.parent.name, []).append(done)
    lines = []
    for paper, done in sorted(per_paper.items()):
        first = min(d["end"] - d["wall_s"] for d in done) - start
        last = max(d["end"] for d in done) - start
        lines.append(f"[timing] {paper}: {len(done)} trial{'s' * (len(done) != 1)} measured, "
                     f"{_clock(sum(d['wall_s'] for d in done))} of trial wall time summed, "
                     f"from {_clock(max(0.0, first))} to {_clock(last)} of this run")
    return lines
