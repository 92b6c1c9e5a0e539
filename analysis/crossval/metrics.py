"""Cross-validation of two lanes: the same cells measured on both, compared metric by metric.

A lane's side is a snapshot (data/crossval/<lane>/<paper>.json): per cell and metric the papers'
statistic (trimmed mean over five trials) with its range and the trials' values, taken from the
trials themselves (`snapshot`) or, where a reference kept only its tables (Collateral Damage's TCG
run), from those (`snapshot_collateral_tables`). `compare` sets two snapshots side by side under
config/crossval.yaml: each difference is within the trials' spread, explained there, or open.

    python -m analysis.crossval snapshot --lane uml --paper westwood --results results/crossval/full/westwood
"""
from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import asdict, dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import yaml

from analysis.aggregate import trimmed_stats
from analysis.ledbat.metrics import trial_metrics_cached
from configuration import CHECKOUT

CONFIG = CHECKOUT / "config" / "crossval.yaml"
SNAPSHOTS = CHECKOUT / "data" / "crossval"


def config() -> dict[str, Any]:
    return yaml.safe_load(CONFIG.read_text())


def wanted(paper: str, cell_ids: list[str]) -> list[str]:
    globs = config()["papers"][paper]["cells"]
    return [c for c in cell_ids if any(fnmatch(c, g) for g in globs)]


# ---------------------------------------------------------------------------------------------
# Snapshots
# ---------------------------------------------------------------------------------------------

def trial_metrics(paper: str, trial: Path) -> dict[str, float]:
    """A trial's numbers: its summary's metrics, and for LEDBAT the per-trial metrics of its figures."""
    summary = json.loads((trial / "summary.json").read_text())
    out = {k: float(v) for k, v in summary["metrics"].items() if isinstance(v, (int, float))}
    if paper == "ledbat":
        out |= trial_metrics_cached(trial)
    return out


def snapshot(lane: str, paper: str, results: Path) -> dict[str, Any]:
    """Every wanted cell of `results` (a paper's result folder) with its valid trials' metrics."""
    metrics = config()["papers"][paper]["metrics"]
    cells: dict[str, Any] = {}
    kernels: set[str] = set()
    for cell in wanted(paper, sorted(p.name for p in results.iterdir() if p.is_dir())):
        per_trial = {}
        trials = [t for t in (results / cell).glob("trial-*") if t.is_dir() and re.fullmatch(r"trial-\d+", t.name)]
        for trial in sorted(trials, key=lambda p: int(p.name.split("-")[1])):
            summary = json.loads((trial / "summary.json").read_text())
            if not summary["valid"]:
                continue
            k = summary["kernel"]
            where = k["where"] + (f"/{k['accel']}" if k.get("accel") else "")
            kernels.add(f"{k['release']} ({where})")
            per_trial[int(trial.name.split("-")[1])] = trial_metrics(paper, trial)
        cells[cell] = {m: {**trimmed_stats([t[m] for t in per_trial.values() if m in t]),
                           "values": [round(t[m], 6) for t in per_trial.values() if m in t]}
                       for m in metrics if any(m in t for t in per_trial.values())}
    return {"lane": lane, "paper": paper, "kernels": sorted(kernels), "source": str(results), "cells": cells}


def snapshot_collateral_tables(figures: Path) -> dict[str, Any]:
    """Collateral Damage's TCG reference from its tables: goodput with its trial std (no range),
    OWD median and mean without spread."""
    cells: dict[str, Any] = {}
    for row in csv.DictReader((figures / "table1.csv").open()):
        if not row["mean_measured"]:
            continue                    # a cell the run did not measure
        cells.setdefault(row["cell"], {})["goodput_kbyte_s"] = {
            "n": int(row["n_valid"]), "mean": float(row["mean_measured"]), "std": float(row["std_measured"]),
            "min": None, "max": None, "values": []}
    for row in csv.DictReader((figures / "table2.csv").open()):
        if not row["median_measured"]:
            continue
        for metric, col in (("owd_median_ms", "median_measured"), ("owd_mean_ms", "mean_measured")):
            cells.setdefault(row["cell"], {})[metric] = {"n": int(row["n_valid"]), "mean": float(row[col]),
                                                         "std": None, "min": None, "max": None, "values": []}
    prov = json.loads((figures / "provenance.json").read_text())
    return {"lane": "tcg", "paper": "collateral", "kernels": [f"{k} (vm/tcg)" for k in prov.get("kernels", {})],
            "source": f"{figures}/table1.csv, table2.csv (its trials were not archived)",
            "cells": {c: v for c, v in cells.items() if c in wanted("collateral", list(cells))}}


def write_snapshot(snap: dict[str, Any], root: Path = SNAPSHOTS) -> Path:
    path = root / snap["lane"] / f"{snap['paper']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    return path


def merge_snapshots(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """`new`'s cells over `old`'s: a rerun of some cells (e.g. after an invalid run) keeps the rest."""
    sources = list(dict.fromkeys([*old["source"].split("; "), new["source"]]))
    return {**new, "kernels": sorted(set(old["kernels"]) | set(new["kernels"])), "source": "; ".join(sources),
            "cells": {**old["cells"], **new["cells"]}}


def load_snapshot(lane: str, paper: str, root: Path = SNAPSHOTS) -> dict[str, Any] | None:
    path = root / lane / f"{paper}.json"
    return json.loads(path.read_text()) if path.exists() else None


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------

@dataclass
class Row:
    comparison: str
    paper: str
    cell: str
    metric: str
    a: float
    b: float
    diff: float
    rel: float | None
    a_range: float | None
    b_range: float | None
    noise: float | None            # the larger of the two ranges that are known
    status: str                    # within spread | explained | beyond spread | wider spread | no spread known
    why: str = ""


def _range(stat: dict[str, Any]) -> float | None:
    return None if stat.get("min") is None or stat.get("max") is None else stat["max"] - stat["min"]


def wider(sa: dict[str, Any], sb: dict[str, Any]) -> bool:
    """Whether b's trials spread far wider than a's (config/crossval.yaml `wider_spread`): then the
    two runs differ in what their trials do, and b's own range would hide any difference of means."""
    ra, rb = _range(sa), _range(sb)
    rule = config()["wider_spread"]
    return (ra is not None and rb is not None and rb > rule["ratio"] * ra
            and rb > rule["share_of_mean"] * abs(sa["mean"]))


def compare(a: dict[str, Any], b: dict[str, Any], name: str = "") -> list[Row]:
    """Every cell and metric both snapshots have, b - a, against the trials' spread."""
    explained = config().get("explained") or {}
    pair = f"{a['lane']}/{b['lane']}"
    rows = []
    for cell in sorted(set(a["cells"]) & set(b["cells"])):
        for metric in config()["papers"][a["paper"]]["metrics"]:
            sa, sb = a["cells"][cell].get(metric), b["cells"][cell].get(metric)
            if not sa or not sb:
                continue
            diff = sb["mean"] - sa["mean"]
            ranges = [r for r in (_range(sa), _range(sb)) if r is not None]
            noise = max(ranges) if ranges else None
            why = next((text for key, text in explained.items()
                        if fnmatch(f"{pair}/{a['paper']}/{cell}/{metric}", key)), "")
            if noise is None:
                status = "no spread known"
            elif wider(sa, sb):
                status = "explained" if why else "wider spread"
            elif abs(diff) <= noise:
                status = "within spread"
            else:
                status = "explained" if why else "beyond spread"
            rows.append(Row(name, a["paper"], cell, metric, sa["mean"], sb["mean"], diff,
                            diff / sa["mean"] if sa["mean"] else None, _range(sa), _range(sb), noise, status,
                            why if status == "explained" else ""))
    return rows


HOLDING = ("within spread", "explained")


def holds(rows: list[Row]) -> bool:
    """A comparison holds when every difference is within the trials' spread or explained: a row with
    no known spread, beyond it or with a far wider spread leaves the lanes' agreement unshown."""
    return bool(rows) and all(r.status in HOLDING for r in rows)


def substrate_holds(paper: str, root: Path = SNAPSHOTS) -> bool:
    """Whether the virtual-time lane reproduces the TCG lane for `paper` (every `substrate`
    comparison of it holds): the condition for leaving its trials to the virtual-time lane."""
    blocks = [rows for comp, p, _, _, rows in comparisons(root) if comp["name"] == "substrate" and p == paper]
    return bool(blocks) and all(holds(rows) for rows in blocks)


def rows_as_dicts(rows: list[Row]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def comparisons(root: Path = SNAPSHOTS) -> list[tuple[dict[str, Any], str, dict[str, Any], dict[str, Any], list[Row]]]:
    """(comparison, paper, snapshot a, snapshot b, rows) of every comparison config/crossval.yaml lists
    whose two snapshots exist; the others are named on stderr."""
    out = []
    for comp in config()["comparisons"]:
        for paper in comp["papers"]:
            a, b = load_snapshot(comp["a"], paper, root), load_snapshot(comp["b"], paper, root)
            if a is None or b is None:
                missing = comp["a"] if a is None else comp["b"]
                print(f"crossval: {comp['name']} {paper}: no {missing} snapshot in {root}: skipped", file=sys.stderr)
                continue
            out.append((comp, paper, a, b, compare(a, b, comp["name"])))
    return out
