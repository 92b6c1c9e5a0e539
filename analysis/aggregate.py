"""Cell aggregation the papers' way: per metric, drop the highest and lowest trial, average the rest.

The Collateral Damage paper ran five trials per cell, discarded the highest and lowest result
and averaged the remaining three. We generalise: with n >= 3 values one highest and one lowest
are dropped (method "trimmed"); with n < 3 nothing can be dropped and the plain mean is used
(method "mean"), which the cell records so nobody mistakes it for the papers' statistic.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from analysis.numbers import finite
from configuration.load import paper_names

CELL_SCHEMA = "tcprepro.cell/1"
PAPER_TRIALS = 5  # trials per cell in the papers


def trimmed_stats(values: Sequence[float]) -> dict[str, Any]:
    """Trimmed mean (drop one highest, one lowest when n >= 3) plus spread.

    min/max are over all values; std is the sample standard deviation (ddof=1) of the kept ones,
    None when fewer than two are kept.
    """
    vals = [float(v) for v in values]
    n = len(vals)
    if n == 0:
        raise ValueError("no values to aggregate")
    ordered = sorted(vals)
    kept = ordered[1:-1] if n >= 3 else ordered
    mean = math.fsum(kept) / len(kept)
    std = (
        math.sqrt(math.fsum((v - mean) ** 2 for v in kept) / (len(kept) - 1)) if len(kept) > 1 else None
    )
    return {
        "n": n,
        "method": "trimmed" if n >= 3 else "mean",
        "mean": mean,
        "std": std,
        "min": ordered[0],
        "max": ordered[-1],
    }


# 802.11b's fastest rate: no goodput over its channel exceeds it (the WLAN spec names no link rate).
WLAN_PHY_KBIT = 11000


class SummaryError(ValueError):
    """A trial's summary.json that is not what its trial wrote: it names another cell or trial than
    its folder, or a goodput its link cannot carry. The message names the file and the fix."""


def link_kbit(spec: dict[str, Any]) -> float | None:
    """The fastest rate a trial's data crossed: its bottleneck's, or the WLAN's PHY rate."""
    scenario = spec.get("scenario") or spec
    bottleneck = scenario.get("bottleneck") or {}
    rates = [float(d["rate_kbit"]) for d in bottleneck.values() if isinstance(d, dict) and finite(d.get("rate_kbit"))]
    if rates:
        return max(rates)
    return WLAN_PHY_KBIT if scenario.get("topology") == "wlan" else None


def check_summary(td: Path, s: dict[str, Any]) -> None:
    """The summary belongs to its folder (<paper>/<cell>/trial-<k>) and its goodputs fit its link."""
    path = td / "summary.json"
    k = _trial_number(td)
    if k is not None and s.get("trial") != k:
        raise SummaryError(f"{path}: names trial {s.get('trial')!r}, its folder is trial-{k}: it is not this "
                           "trial's summary; run the trial again (or restore it from its archive)")
    # the cell is its folder's name; the paper its parent's, where that is a paper's name (results/
    # <profile>/<paper>/<cell>/trial-<k>: a test's or a copy's folder may be named otherwise)
    checks = [("cell", td.parent.name)]
    if td.parent.parent.name in paper_names():
        checks.append(("paper", td.parent.parent.name))
    for key, folder in checks:
        if s.get(key) is not None and s.get(key) != folder and k is not None:
            raise SummaryError(f"{path}: names {key} {s.get(key)!r}, its folder is {folder!r}: it is not this "
                               "trial's summary; run the trial again (or restore it from its archive)")
    spec_path = td / "spec.json"
    try:
        spec = json.loads(spec_path.read_text()) if spec_path.exists() else {}
    except ValueError:
        raise SummaryError(f"{spec_path}: not readable JSON; run the trial again") from None
    rate = link_kbit(spec) if isinstance(spec, dict) else None
    if rate is None:
        return
    metrics = s.get("metrics") or {}
    # One flow's goodput is at most the link's; a total sums each flow's over its own transfer time
    # (fixed-size flows need not overlap), so it is at most the link's times the flows.
    flows = max(1, sum(1 for name in metrics if re.fullmatch(r"[a-z]+\d+\.goodput_kbit_s", name)))
    for name, v in metrics.items():
        kbit = (v if name.endswith("goodput_kbit_s") else 8 * v if name.endswith("goodput_kbyte_s") else None) \
            if "goodput" in name and finite(v) else None
        bound = rate if "." in name else rate * flows
        if kbit is not None and not 0 <= kbit <= bound:
            raise SummaryError(f"{path}: {name} = {v:g} is beyond what its {rate:g}-kbit/s link carries"
                               f"{'' if '.' in name else f' for {flows} flow(s)'}: the summary is not what the "
                               "trial measured; run the trial again")


def aggregate_cell(trial_dirs: Iterable[Path | str], expected_trials: int = PAPER_TRIALS) -> dict[str, Any]:
    """cell.json content from the summary.json of each trial directory.

    Trials whose summary says `valid: false`, or that have no summary, are excluded and listed
    with their reasons. `complete` is true only when exactly `expected_trials` valid trials exist.
    Each metric is aggregated over the valid trials that report it (its own `n`).
    """
    valid: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    for td in sorted((Path(t) for t in trial_dirs), key=_trial_sort_key):
        path = td / "summary.json"
        if not path.exists():
            excluded.append({"trial": _trial_number(td), "dir": str(td), "reasons": ["no summary.json"]})
            continue
        try:
            s = json.loads(path.read_text())
        except ValueError:
            raise SummaryError(f"{path}: not readable JSON; run the trial again") from None
        if not isinstance(s, dict):
            raise SummaryError(f"{path}: not a JSON object; run the trial again")
        check_summary(td, s)
        if s.get("valid") is True:
            valid.append(s)
        else:
            excluded.append({"trial": s.get("trial"), "dir": str(td),
                             "reasons": s.get("invalid_reasons") or ["valid is not true"]})
    first = valid[0] if valid else {}
    return {
        "schema": CELL_SCHEMA,
        "paper": first.get("paper"),
        "cell": first.get("cell"),
        "expected_trials": expected_trials,
        "n_valid": len(valid),
        "complete": len(valid) == expected_trials,
        "trials": [s["trial"] for s in valid],
        "excluded": excluded,
        "metrics": aggregate_metrics(valid),
    }


def write_cell(
    cell_dir: Path | str,
    expected_trials: int = PAPER_TRIALS,
    trial_dirs: Iterable[Path | str] | None = None,
) -> Path:
    """Aggregate `cell_dir/trial-<k>/` (finished ones only) into `cell_dir/cell.json`."""
    cell = Path(cell_dir)
    if trial_dirs is None:
        trial_dirs = [t for t in cell.glob("trial-*") if t.is_dir() and re.fullmatch(r"trial-\d+", t.name)]
    doc = aggregate_cell(trial_dirs, expected_trials)
    out = cell / "cell.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    return out


def unaggregated(results: Path, cells: Iterable[str] | None = None) -> list[str]:
    """The cells under `results` (of `cells`, when given) that hold trials (not one still under way,
    `.partial`) but no cell.json: trials restored or copied in by hand, which an analysis would take
    for cells never measured."""
    names = sorted(c.name for c in results.iterdir() if c.is_dir()) if cells is None else list(cells)
    return [c for c in names if not (results / c / "cell.json").exists()
            and any(t.is_dir() and t.suffix != ".partial" for t in (results / c).glob("trial-*"))]


def aggregate_metrics(summaries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per metric, its trials' values and their trimmed statistics, from [{"trial": k, "metrics":
    {...}}, ...] (summary.json documents, or a paper's own per-trial metrics)."""
    names: list[str] = []
    for s in summaries:
        names.extend(k for k in s.get("metrics", {}) if k not in names)
    out = {}
    for name in names:
        pairs = [(s["trial"], s["metrics"][name]) for s in summaries if finite(s["metrics"].get(name))]
        if pairs:
            out[name] = {"trials": [t for t, _ in pairs], "values": [v for _, v in pairs]}
            out[name] |= trimmed_stats([v for _, v in pairs])
    return out


def with_trial_metrics(results: Path, cells: dict[str, dict[str, Any]], needs: Sequence[str],
                       compute: Callable[[Path], dict[str, float]],
                       only: Callable[[str], bool] = lambda _cell_id: True) -> dict[str, dict[str, Any]]:
    """The cells (`only` those selected) with metrics a paper computes from each valid trial's raw
    files merged into their `metrics` (per trial, then the papers' trimmed mean). A trial whose
    `needs` files are not at hand adds nothing: those metrics stay unmeasured, never guessed."""
    out = dict(cells)
    for cell_id, cell in cells.items():
        if not only(cell_id):
            continue
        per_trial = []
        for k in cell.get("trials", []):
            trial = results / cell_id / f"trial-{k}"
            if all((trial / name).exists() for name in needs):
                per_trial.append({"trial": k, "metrics": compute(trial)})
        out[cell_id] = {**cell, "metrics": {**cell.get("metrics", {}), **aggregate_metrics(per_trial)}}
    return out


def _trial_number(td: Path) -> int | None:
    mt = re.fullmatch(r"trial-(\d+)", td.name)
    return int(mt.group(1)) if mt else None


def _trial_sort_key(td: Path) -> tuple[int, str]:
    k = _trial_number(td)
    return (k if k is not None else 1 << 30, td.name)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m analysis.aggregate --expected N CELL_DIR [TRIAL_DIR...]`: write CELL_DIR/cell.json."""

    ap = argparse.ArgumentParser(prog="python -m analysis.aggregate", description=main.__doc__)
    ap.add_argument("cell_dir", type=Path, help="the cell's folder; cell.json is written there")
    ap.add_argument("--expected", type=int, required=True, help="how many trials the profile plans per cell")
    ap.add_argument("trials", type=Path, nargs="*", help="the trial folders to aggregate (default: every trial-<k>)")
    a = ap.parse_args(argv)
    try:
        write_cell(a.cell_dir, expected_trials=a.expected, trial_dirs=a.trials or None)
    except SummaryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
