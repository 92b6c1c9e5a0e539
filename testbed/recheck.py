"""Evaluate a post-trial fidelity check again on finished trials, after its code was corrected.

finalize computes some checks from the trial's own files once the trial has ended
(testbed/finalize.py); the trial records the result, and its validity follows from it. When such a
check's code is corrected, the trials already measured keep the old result, and with it a validity
the corrected check may not give: `tcprepro recheck` evaluates the check again from the same files.
A trial whose verdict of the check changes (pass, fail, not measured) gets the new result in
provenance.json's `fidelity` and the recorded one under `rechecked` with the version that replaced
it; summary.json's `valid` and its lines on that check follow. A trial whose verdict stays keeps
its record as measured, even where the corrected check words its numbers otherwise (a tolerance
computed per window, say): rewriting it would change every archived trial and no validity. Nothing
else of a trial changes: its raw files, its metrics and its other checks are those measured.
A compact twin (archive/compact.py) holds no raw files to evaluate a check from: it is named, with
the command that measures it again, and left as it is.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis import claims_input
from testbed import fidelity, shaping


def _worst_window(trial: Path, spec: dict[str, Any], prov: dict[str, Any]) -> dict[str, Any]:
    # deferred: pandas, as in finalize
    from analysis.summarize import measurement_window

    forward = shaping.DirectionSpec.from_config(spec["scenario"]["bottleneck"]["forward"])
    return fidelity.worst_window_rate_check(trial / "qdisc.csv", forward, measurement_window(spec, prov),
                                            fidelity.tolerances(prov["kernel"]["where"]))


# The checks finalize computes from the trial's files alone, by the name they record.
RECHECKS: dict[str, Callable[[Path, dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    "forward.rate_worst_0.5s": _worst_window,
}


class RawFilesMissing(RuntimeError):
    """A finished trial archived compactly: the files a check is evaluated from are not kept."""


@dataclass(frozen=True)
class Change:
    """One trial whose check changed: what it recorded, and what it records now."""

    trial: Path
    before: dict[str, Any]
    after: dict[str, Any]

    def render(self, root: Path) -> str:
        def says(c: dict[str, Any]) -> str:
            verdict = {True: "pass", False: "FAIL", None: "not measured"}[c["pass"]]
            return f"{verdict} ({c['measured']} {c['unit']}, tolerance {c['tolerance']})"
        return f"{self.trial.relative_to(root)}: {says(self.before)} -> {says(self.after)}"


def recheck(trial: Path, name: str, by: str) -> Change | None:
    """Evaluate check `name` again on one finished trial; write and return the change of verdict, if any.
    A trial that never ran the check (a simulated one, say) is left alone."""
    if name not in RECHECKS:
        raise ValueError(f"{name!r} cannot be evaluated again; these can: {', '.join(RECHECKS)}")
    prov_path, summary_path = trial / "provenance.json", trial / "summary.json"
    prov = json.loads(prov_path.read_text())
    at = [i for i, c in enumerate(prov.get("fidelity", [])) if c.get("name") == name]
    if not at:
        return None
    if claims_input.is_compact(trial):
        spec = json.loads((trial / "spec.json").read_text())
        raise RawFilesMissing(
            f"{trial}: a compact twin, its raw files not archived, so {name} cannot be evaluated again; "
            f"measure it again: python -m tcprepro trial --paper {spec['paper']} --cell {spec['cell']} "
            f"--trial {spec['trial']} --profile {spec['profile']} --out {trial}")
    before = prov["fidelity"][at[-1]]
    after = json.loads(json.dumps(RECHECKS[name](trial, json.loads((trial / "spec.json").read_text()), prov)))
    if after.get("pass") == before.get("pass"):
        return None
    # deferred: pandas (analysis) and jsonschema, as in finalize
    from analysis import require_valid
    from analysis.summarize import fidelity_line

    prov["fidelity"][at[-1]] = after
    prov.setdefault("rechecked", []).append({"name": name, "before": before, "by": by})
    require_valid(prov, "provenance")
    summary = json.loads(summary_path.read_text())
    prefix = f"fidelity {name}:"
    summary["invalid_reasons"] = [r for r in summary["invalid_reasons"] if not r.startswith(prefix)]
    summary["warnings"] = [w for w in summary["warnings"] if not w.startswith(prefix)]
    if after["pass"] is False:
        summary["invalid_reasons"].append(fidelity_line(after))
    elif after["pass"] is None:
        summary["warnings"].append(fidelity_line(after))
    summary["valid"] = not summary["invalid_reasons"]
    require_valid(summary, "summary")
    _write(prov_path, prov)
    _write(summary_path, summary)
    return Change(trial, before, after)


def _write(path: Path, doc: dict[str, Any]) -> None:
    """Atomically, in the indentation finalize writes."""
    tmp = path.with_name(path.name + ".recheck")
    tmp.write_text(json.dumps(doc, indent=2))
    tmp.replace(path)


def recheck_all(trials: Iterable[Path], name: str, by: str) -> tuple[list[Change], list[RawFilesMissing]]:
    """The changes, and the trials that could not be evaluated (each named with its fix)."""
    changes, missing = [], []
    for t in trials:
        try:
            if (c := recheck(t, name, by)) is not None:
                changes.append(c)
        except RawFilesMissing as exc:
            missing.append(exc)
    return changes, missing
