"""The lane as an open choice: each claim judged on the cells the cross-validation measured on both
lanes (config/crossval.yaml's `substrate` comparison: the same procedure on the QEMU TCG VM and on
UML), once with each lane's trials, to say which verdicts the lane changes (docs/robustness.md).

The cross-validation kept each lane's trials as snapshots (data/crossval/<run>/<paper>.json): per
cell and metric the trials' values. Each snapshot becomes a results folder of cell.json files with
those values and no trial folders, and the paper's own analysis judges it. A claim is judged on the
lanes only when it lacks no value on either side: most claims read cells or metrics the
cross-validation did not measure, and for those the lane is not known, never robust by default. The
judging reads the snapshots alone, not the results. A snapshot without its trials' values (a
committed table read back) gives no noise estimate, so no claim that reads it is judged. Both sides
ran the cross-validation's procedure, not necessarily the reference's today (config/crossval.yaml
says which): a flip here says the lane moves the claim under that procedure.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from analysis.crossval import metrics as crossval

COMPARISON = "substrate"
PLANNED = 5          # trials per cell on each lane (config/crossval.yaml: "five trials each")


def comparison(paper: str) -> dict[str, Any] | None:
    """The paper's substrate comparison in config/crossval.yaml (run a: the other lane, b: the
    reference's lane), or None where the paper has none."""
    cfg = crossval.config()
    found = [c for c in cfg.get("comparisons", []) if c["name"] == COMPARISON and paper in c["papers"]]
    return {**found[0], "runs": cfg["runs"]} if found else None


def snapshot_path(run: str, paper: str, root: Path = crossval.SNAPSHOTS) -> Path:
    return root / run / f"{paper}.json"


def cells_of(snapshot: dict[str, Any], dest: Path) -> Path:
    """`dest`: one cell.json per snapshot cell, each metric with its trials' values (numbered in the
    order the snapshot kept them) and no trial folders. The trials of a cell are paired across its
    metrics by that order, so a cell whose metrics hold different numbers of values is refused."""
    dest.mkdir(parents=True)
    for cell_id, metrics in snapshot["cells"].items():
        counts = {len(m.get("values") or []) for m in metrics.values()}
        if len(counts) > 1:
            raise ValueError(f"{snapshot['lane']}/{snapshot['paper']} {cell_id}: its metrics hold {sorted(counts)} "
                             "values, so its trials cannot be paired; take the snapshot again "
                             "(python -m analysis.crossval snapshot)")
        n = counts.pop() if counts else 0
        doc = {"schema": "tcprepro.cell/1", "paper": snapshot["paper"], "cell": cell_id,
               "expected_trials": n, "n_valid": n, "complete": True, "trials": [], "excluded": [],
               "metrics": {name: {"trials": list(range(1, len(m.get("values") or []) + 1)),
                                  "values": list(m.get("values") or []), "n": m.get("n"),
                                  "method": m.get("method", "trimmed"), "mean": m.get("mean"),
                                  "std": m.get("std"), "min": m.get("min"), "max": m.get("max")}
                           for name, m in metrics.items()}}
        (dest / cell_id).mkdir()
        (dest / cell_id / "cell.json").write_text(json.dumps(doc, indent=1) + "\n")
    return dest


def short_cells(snapshot: dict[str, Any]) -> dict[str, int]:
    """{cell: valid trials} for the snapshot's cells with some but fewer than PLANNED."""
    counts = {c: max((len(m.get("values") or []) for m in ms.values()), default=0)
              for c, ms in sorted(snapshot["cells"].items())}
    return {c: n for c, n in counts.items() if 0 < n < PLANNED}


def judge(paper: str, profile: str, reference: dict[str, str],
          root: Path = crossval.SNAPSHOTS) -> dict[str, Any] | None:
    """{comparison, runs, verdicts: {claim: {run: verdict}} for the claims judged on both lanes}, or
    None where the paper has no substrate comparison or a snapshot is missing. `reference`: the
    reference's verdict per claim (one not evaluated there is not judged here either)."""
    from analysis import robustness  # it imports this module

    comp = comparison(paper)
    if comp is None:
        return None
    runs = [comp["a"], comp["b"]]
    paths = [snapshot_path(r, paper, root) for r in runs]
    if not all(p.exists() for p in paths):
        return None
    snaps = [json.loads(p.read_text()) for p in paths]
    judged: list[dict[str, tuple[str, set[str]]]] = []
    with tempfile.TemporaryDirectory(prefix="tcprepro-lane-") as tmp:
        for run, snap in zip(runs, snaps, strict=True):
            judged.append(robustness.verdicts_in(paper, profile, cells_of(snap, Path(tmp) / run)))
    verdicts = {}
    for claim, ref_verdict in reference.items():
        got = [j.get(claim, (robustness.NOT_RUN, {"not judged"})) for j in judged]
        if ref_verdict == robustness.NOT_RUN or any(v == robustness.NOT_RUN or gaps for v, gaps in got):
            continue
        verdicts[claim] = {run: v for run, (v, _) in zip(runs, got, strict=True)}
    return {"comparison": comp["title"],
            "runs": [{"run": r, "what": comp["runs"][r], "kernels": s["kernels"], "cells": sorted(s["cells"]),
                      "values_kept": any(m.get("values") for c in s["cells"].values() for m in c.values()),
                      "short": short_cells(s)}
                     for r, s in zip(runs, snaps, strict=True)],
            "verdicts": verdicts}


def flips(doc: dict[str, Any], claim: str) -> bool:
    """Whether the claim, judged on both lanes, gets two verdicts."""
    got = doc.get("lane", {}).get("verdicts", {}).get(claim)
    return bool(got) and len(set(got.values())) > 1


def judged(doc: dict[str, Any]) -> list[str]:
    return list(doc.get("lane", {}).get("verdicts", {}))
