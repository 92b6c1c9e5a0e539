"""Westwood+ vs CUBIC: the sweeps that extend the report's three tests to where Westwood+ overtakes
CUBIC, the trial nearest a cell's median, and the report's tcp_probe listing (Figure 1)."""
from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.report.paper_run import cc_label
from analysis.westwood.claims import CCS, GOODPUT, LEVEL_PCT, Cells


@dataclass
class SweepPoint:
    x: float
    cond: str
    mean: dict[str, float | None]
    noise: dict[str, float | None]          # the trials' min-max range (analysis/verdicts.py)
    n: dict[str, int]
    level_pct: float = LEVEL_PCT

    def advantage_pct(self) -> float | None:
        """Westwood+ minus CUBIC, in % of their mean throughput (None unless both are measured)."""
        c, w = self.mean["cubic"], self.mean["westwood"]
        if c is None or w is None:
            return None
        return 100.0 * (w - c) / ((w + c) / 2)

    def lead(self) -> str | None:
        """The algorithm ahead here, or None when they are level: apart by no more than `level_pct`
        of their throughput or than the noise of the verdict rule (the larger trial range)."""
        adv = self.advantage_pct()
        if adv is None:
            return None
        c, w = self.mean["cubic"], self.mean["westwood"]
        noise = 100.0 * max(self.noise["cubic"] or 0, self.noise["westwood"] or 0) / ((w + c) / 2)  # type: ignore[operator]
        if abs(adv) <= max(self.level_pct, noise):
            return None
        return "westwood" if adv > 0 else "cubic"


def sweep(cells: Cells, spec: dict[str, Any]) -> list[SweepPoint]:
    """The sweep's conditions in axis order, each with both algorithms' trimmed mean and noise."""
    points = []
    for cond in spec["conditions"]:
        params = cells.params.get(("cubic", cond)) or cells.params.get(("westwood", cond)) or {}
        if spec["axis"] not in params:
            continue
        ms = {cc: cells.m(cc, cond, GOODPUT) for cc in CCS}
        points.append(SweepPoint(
            x=float(params[spec["axis"]]), cond=cond,
            mean={cc: None if m is None else m.value for cc, m in ms.items()},
            noise={cc: None if m is None else m.noise for cc, m in ms.items()},
            n={cc: int((cells.by_key.get((cc, cond)) or {}).get("n_valid", 0)) for cc in CCS},
            level_pct=float(spec.get("level_pct", LEVEL_PCT)),
        ))
    return sorted(points, key=lambda p: p.x)


def _both(points: list[SweepPoint]) -> list[SweepPoint]:
    return [p for p in points if all(p.mean[cc] is not None for cc in CCS)]


def crossovers(points: list[SweepPoint]) -> list[dict[str, Any]]:
    """Where an algorithm pulls ahead between neighbouring measured points (from level, or from
    behind): `to` names it, `at` interpolates linearly where its advantage reaches the level band."""
    out = []
    for a, b in itertools.pairwise(_both(points)):
        to = b.lead()
        if to is None or a.lead() == to:
            continue
        sign = 1.0 if to == "westwood" else -1.0
        ea = sign * a.advantage_pct() - b.level_pct          # type: ignore[operator]
        eb = sign * b.advantage_pct() - b.level_pct          # type: ignore[operator]
        x = a.x + (b.x - a.x) * (0 - ea) / (eb - ea) if eb != ea else b.x
        out.append({"between": [a.x, b.x], "at": max(a.x, min(b.x, x)), "to": to})
    return out


def describe_sweep(points: list[SweepPoint], unit: str) -> str:
    """One sentence: who leads where over the sweep (level, or one ahead), runs of equal lead joined."""
    measured = _both(points)
    if len(measured) < 2:
        return "not enough of the sweep measured"
    runs: list[tuple[str | None, float, float]] = []
    for p in measured:
        lead = p.lead()
        if runs and runs[-1][0] == lead:
            runs[-1] = (lead, runs[-1][1], p.x)
        else:
            runs.append((lead, p.x, p.x))
    band = measured[0].level_pct
    parts = []
    for lead, lo, hi in runs:
        who = f"{cc_label(lead)} ahead" if lead else f"level (within {band:g} % or the trials' range)"
        parts.append(f"{who} at {lo:g} {unit}" if lo == hi else f"{who} from {lo:g} to {hi:g} {unit}")
    return "; ".join(parts)


# ------------------------------------------------------------------------------------------
# Trials and traces
# ------------------------------------------------------------------------------------------

def median_trial(results: Path, cell_id: str, cell: dict[str, Any] | None, metric: str = GOODPUT) -> Path | None:
    """The valid trial whose `metric` is nearest the median over the cell's valid trials (the
    report shows one trace per test; we name which one)."""
    if not cell:
        return None
    values = {}
    for k in cell.get("trials", []):
        d = results / cell_id / f"trial-{k}"
        summary = d / "summary.json"
        if summary.exists():
            v = json.loads(summary.read_text()).get("metrics", {}).get(metric)
            if isinstance(v, int | float) and math.isfinite(v):
                values[d] = float(v)
    if not values:
        return None
    med = float(pd.Series(list(values.values())).median())
    return min(values, key=lambda d: (abs(values[d] - med), d.name))


def tcpprobe_listing(probe: pd.DataFrame, rows: int = 8) -> list[str]:
    """Lines of a tcp:tcp_probe frame in the layout of the 2.6.32 tcp_probe module the report used
    (its Figure 1): time src:port dst:port length snd_nxt snd_una snd_cwnd ssthresh snd_wnd srtt.
    The module printed srtt in jiffies-derived units; the tracepoint gives microseconds, so the last
    column is microseconds here."""
    out = []
    t0 = float(probe["t"].iloc[0]) if len(probe) else 0.0
    for r in probe.head(rows).itertuples(index=False):
        out.append(f"{r.t - t0:.9f} {r.src}:{r.sport} {r.dst}:{r.dport} {r.data_len} {r.snd_nxt:#x} "
                   f"{r.snd_una:#x} {r.snd_cwnd} {r.ssthresh} {r.snd_wnd} {r.srtt_us}")
    return out
