"""Whether a simulation model's current sources still give the results its archived trials recorded.

A simulated trial records the model sources it ran (provenance `simulator.sources_sha256`); a trial
of other sources than the checkout's is stale (analysis/report/provenance.py), so results of two builds of
the model never mix unflagged. A change that only adds an option, and leaves every run without it
as it was, would still mark every archived trial stale. Whether it left them as they were is not
taken on trust: this check reruns archived trials with the checkout's model and compares the raw
output field by field (ns-3 is deterministic for a seed and run). Every field the trial recorded
must come back equal, except the run's own wall-clock time; fields the new sources add are listed.

The trials rerun are chosen so that every value of every scenario field in the archive appears in
at least one of them (a greedy cover over the cells: scenario, scheduler, queue sizes, M_t, TCP ...),
each at another trial index. When all come back equal the pair of source digests is recorded in
sim/<dir>/equivalent_sources.yaml with the trials that showed it; staleness then treats trials of
the recorded sources as trials of the current ones. A single differing field fails the check and
records nothing: those trials are stale, and only rerunning them brings them back.

`python -m tcprepro equivalence wlan [--results results/full/wlan] [--record]` runs it (the paper's
config names the model).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from configuration import CHECKOUT
from sim import build

# Raw-output fields that are not results of the simulation.
NOT_RESULTS = ("wall_clock_s",)
HEADER = ("# Model sources shown to give the same raw output as newer sources, per model: written by\n"
          "# `python -m tcprepro equivalence <paper> --record` (sim/equivalence.py), read by the staleness check.\n")


def record_path(model_name: str) -> Path:
    return CHECKOUT / "sim" / build.model(model_name).directory / "equivalent_sources.yaml"


def records(model_name: str) -> list[dict[str, Any]]:
    path = record_path(model_name)
    if not path.exists():
        return []
    return [r for r in yaml.safe_load(path.read_text()) or [] if r.get("model") == model_name]


def newest_equal(model_name: str, ran: str) -> str:
    """The newest sources a chain of recorded checks joins `ran` to (`ran` itself when none does):
    trials whose sources lead to the same digest ran, as far as reruns showed, the same model."""
    step = {r["ran"]: r["same_as"] for r in records(model_name)}
    seen = set()
    while ran in step and ran not in seen:
        seen.add(ran)
        ran = step[ran]
    return ran


def same_sources(model_name: str, ran: str, current: str) -> bool:
    """True when trials of sources `ran` stand for trials of `current`: equal, or joined by a chain
    of recorded checks (each from older sources to the next)."""
    step = {r["ran"]: r["same_as"] for r in records(model_name)}
    seen = set()
    while ran != current and ran in step and ran not in seen:
        seen.add(ran)
        ran = step[ran]
    return ran == current


@dataclass
class Trial:
    cell: str
    path: Path
    spec: dict[str, Any]
    sources: str


@dataclass
class Outcome:
    trial: Trial
    differing: list[tuple[str, Any, Any]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def same(self) -> bool:
        return not self.differing and not self.error


def archived_trials(results: Path, model_name: str) -> list[Trial]:
    """The valid trials under `results` (one paper's cells) that ran `model_name`."""
    raw = build.adapter(model_name).RAW
    out = []
    for spec_path in sorted(results.glob("*/trial-*/spec.json")):
        d = spec_path.parent
        prov_path, summary_path = d / "provenance.json", d / "summary.json"
        if not (prov_path.exists() and summary_path.exists() and (d / raw).exists()):
            continue
        if not json.loads(summary_path.read_text()).get("valid"):
            continue
        spec = json.loads(spec_path.read_text())
        if (spec.get("scenario") or {}).get("model") != model_name:
            continue
        sim = json.loads(prov_path.read_text()).get("simulator") or {}
        out.append(Trial(d.parent.name, d, spec, str(sim.get("sources_sha256", ""))))
    return out


def cover(trials: list[Trial]) -> list[Trial]:
    """A few trials, one per cell at most, that together show every value every scenario field takes
    in `trials`; trial indices rotate so that not every rerun is a trial 1."""
    by_cell: dict[str, list[Trial]] = {}
    for t in trials:
        by_cell.setdefault(t.cell, []).append(t)

    def values(t: Trial) -> set[tuple[str, str]]:
        return {(k, json.dumps(v, sort_keys=True)) for k, v in t.spec["scenario"].items()}

    wanted = set().union(*(values(t) for t in trials)) if trials else set()
    chosen: list[Trial] = []
    cells = sorted(by_cell)
    while wanted:
        best = max(cells, key=lambda c: (len(values(by_cell[c][0]) & wanted), -cells.index(c)))
        gain = values(by_cell[best][0]) & wanted
        if not gain:
            break
        group = sorted(by_cell[best], key=lambda t: t.path.name)
        chosen.append(group[len(chosen) % len(group)])
        wanted -= gain
        cells.remove(best)
    return chosen


def rerun(t: Trial, binary: Path, model_name: str, scratch: Path) -> Outcome:
    """Run the trial's spec with `binary`; compare its raw output with the recorded one."""
    adapter = build.adapter(model_name)
    out = scratch / t.cell / t.path.name
    out.mkdir(parents=True)
    # run in its output folder (sim/wlan/model.py command: a path on its command line stops at a space)
    proc = subprocess.run(adapter.command(binary, t.spec, Path(".")), cwd=out, capture_output=True, text=True)
    if proc.returncode != 0:
        return Outcome(t, error=f"the model exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    old = json.loads((t.path / adapter.RAW).read_text())
    try:
        new = build.read_output(out / adapter.RAW)
    except RuntimeError as exc:
        return Outcome(t, error=str(exc))
    differing = [(k, old[k], new.get(k)) for k in sorted(old) if k not in NOT_RESULTS and old[k] != new.get(k)]
    return Outcome(t, differing, sorted(set(new) - set(old)))


def newest(model_name: str, ran: set[str]) -> set[str]:
    """The sources among `ran` that no recorded check joins to another of them: trials of older
    sources recorded as equivalent to newer ones in `ran` stand for trials of those."""
    return {s for s in ran if not any(o != s and same_sources(model_name, s, o) for o in ran)}


def check(results: Path, model_name: str, log: bool = True) -> tuple[str, str, list[Outcome]]:
    """(sources the archived trials ran, the checkout's sources, the reruns' outcomes). Reruns only
    trials of sources that are not already the checkout's or recorded as equivalent to them; the
    archived trials must have run one set of sources, or older ones recorded as equivalent to it
    (their recorded output is then that set's, and the cover draws on them all)."""
    current = build.sources_sha256(model_name)
    pending = [t for t in archived_trials(results, model_name) if not same_sources(model_name, t.sources, current)]
    if not pending:
        return current, current, []
    ran = newest(model_name, {t.sources for t in pending})
    if len(ran) > 1:
        raise ValueError(f"the trials under {results} ran {len(ran)} different model sources "
                         f"({', '.join(sorted(s[:16] for s in ran))}) that no recorded check joins; check one "
                         "results directory per build")
    binary = build.ensure(model_name, log=log).path
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="equivalence-") as tmp:
        for t in cover(pending):
            if log:
                print(f"rerunning {t.cell}/{t.path.name} ...", file=sys.stderr, flush=True)
            outcomes.append(rerun(t, binary, model_name, Path(tmp)))
            if not outcomes[-1].same:
                break           # one difference decides it
    return ran.pop(), current, outcomes


def record(model_name: str, ran: str, current: str, outcomes: list[Outcome]) -> Path:
    path = record_path(model_name)
    existing = yaml.safe_load(path.read_text()) if path.exists() else []
    entry = {"model": model_name, "ran": ran, "same_as": current,
             "trials": [f"{o.trial.cell}/{o.trial.path.name}" for o in outcomes],
             "ignored_fields": list(NOT_RESULTS)}
    added = sorted({a for o in outcomes for a in o.added})
    if added:
        entry["added_fields"] = added
    kept = [r for r in existing or [] if not (r.get("model") == model_name and r.get("ran") == ran)]
    path.write_text(HEADER + yaml.safe_dump([*kept, entry], sort_keys=False, width=100))
    return path


def run(paper: str, model_name: str, results: Path | None, record_it: bool) -> int:
    """Check `paper`'s archived trials of model `model_name` and print the outcome per rerun trial;
    with `record_it`, record the sources' equivalence when every field came back equal. The exit
    status: 0 equal (or nothing to check), 1 a field differs, 2 the check could not run."""
    results = results or CHECKOUT / "results" / "full" / paper
    if not results.is_dir():
        print(f"error: no trials under {results}; `make restore` unpacks the archived ones", file=sys.stderr)
        return 2
    try:
        ran, current, outcomes = check(results, model_name)
    except (build.BuildError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not outcomes:
        print(f"{paper}: every trial under {results} ran the checkout's {model_name} sources "
              f"({current[:16]}) or sources recorded as equivalent; nothing to check")
        return 0
    for o in outcomes:
        what = ("same" if o.same else o.error or "; ".join(f"{k}: {x!r} -> {y!r}" for k, x, y in o.differing[:5]))
        print(f"{o.trial.cell}/{o.trial.path.name}: {what}")
    failed = next((o for o in outcomes if o.error), None)
    if failed is not None:
        print(f"error: could not rerun {failed.trial.cell}/{failed.trial.path.name}: {failed.error}; nothing "
              "recorded, run the check again", file=sys.stderr)
        return 2
    if not all(o.same for o in outcomes):
        print(f"{paper}: sources {ran[:16]} do not give what {current[:16]} gives: their trials are stale",
              file=sys.stderr)
        return 1
    print(f"{paper}: {len(outcomes)} trials of sources {ran[:16]} rerun with {current[:16]}: every recorded field "
          f"equal (except {', '.join(NOT_RESULTS)})")
    if record_it:
        print(f"recorded in {record(model_name, ran, current, outcomes).relative_to(CHECKOUT)}")
    return 0


