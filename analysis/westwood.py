"""Westwood+ vs CUBIC (Gerhard, Girardi 2012): the report's claims, its sweeps, its listings.

Each claim in config/westwood.yaml (`reference.claims`) has an id that names one function here and
is judged on the cells' trimmed means (analysis/verdicts.py says what each verdict means). The
sweeps extend the report's three tests to where Westwood+ overtakes CUBIC.
"""
from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.compare import cell_value
from analysis.verdicts import Verdict, judge

CCS = ("cubic", "westwood")
LABEL = {"cubic": "CUBIC", "westwood": "Westwood+"}
GOODPUT = "goodput_kbit_s"
OSCILLATION = "bulk0.cwnd_range_rel"
EVENTS = "bulk0.congestion_events"
INFINITE_SSTHRESH = 0x7FFFFFFF        # the kernel's "not set yet" (TCP_INFINITE_SSTHRESH)
# Sweeps: closer than this (% of their throughput) the two are level, whatever the trials say: a lead of
# 0.1 %, however repeatable, is not one a user of either algorithm would notice. config may override.
LEVEL_PCT = 1.0


@dataclass
class Cells:
    """Measured cells (with at least one valid trial) indexed by (cc, condition)."""

    by_key: dict[tuple[str, str], dict[str, Any]]
    params: dict[tuple[str, str], dict[str, Any]]

    @classmethod
    def from_cells(cls, cells: dict[str, dict[str, Any]], params: dict[str, dict[str, Any]]) -> Cells:
        by_key = {}
        for cell_id, cell in cells.items():
            p = params.get(cell_id)
            if p and cell.get("n_valid", 0) > 0:
                by_key[(p["cc"], p["cond"])] = cell
        return cls(by_key, {(p["cc"], p["cond"]): p for p in params.values()})

    def value(self, cc: str, cond: str, metric: str, stat: str = "mean") -> float | None:
        return cell_value(self.by_key.get((cc, cond)), metric, stat)


def _pair(cells: Cells, cond: str, metric: str) -> tuple[float | None, float | None]:
    return cells.value("cubic", cond, metric), cells.value("westwood", cond, metric)


def _vs_report(label: str, cc: str, value: float, ref: float, tol_pct: float, held: list[str],
               failed: list[str]) -> None:
    off = 100.0 * (value - ref) / ref
    line = f"{label}: {LABEL[cc]} {value:.0f} kbit/s vs the report's {ref:.0f} ({off:+.1f} %, tolerance {tol_pct:g} %)"
    (held if abs(off) <= tol_pct else failed).append(line)


def equal_at_test1(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Verdict:
    """Each algorithm within the tolerance of the report's 9500 kbit/s, and of each other."""
    tol = float(claim.get("tolerance_pct", 5))
    cubic, west = _pair(cells, "t1", GOODPUT)
    if cubic is None or west is None:
        return judge(claim, [], [], ["Test 1: CUBIC or Westwood+ not measured"])
    held, failed = [], []
    for cc, v in (("cubic", cubic), ("westwood", west)):
        _vs_report("Test 1", cc, v, reference[f"{cc}-t1"], tol, held, failed)
    spread = 100.0 * abs(cubic - west) / ((cubic + west) / 2)
    line = f"Test 1: CUBIC {cubic:.0f} vs Westwood+ {west:.0f} kbit/s, apart by {spread:.1f} % (tolerance {tol:g} %)"
    (held if spread <= tol else failed).append(line)
    return judge(claim, held, failed, [])


def _ahead(cells: Cells, claim: dict[str, Any], cond: str, ahead: str, reference: dict[str, float]) -> Verdict:
    """The order of the two throughputs; given `tolerance_pct`, each against the report's number too.
    On a path with delay, the note says what both sets of numbers mean in bytes in flight per base
    round trip (throughput x RTT): where the report's are a small part of ours, its senders were held
    back by something the report does not describe."""
    behind = next(c for c in CCS if c != ahead)
    a, b = cells.value(ahead, cond, GOODPUT), cells.value(behind, cond, GOODPUT)
    if a is None or b is None:
        return judge(claim, [], [], [f"{cond}: CUBIC or Westwood+ not measured"])
    ref_a, ref_b = reference.get(f"{ahead}-{cond}"), reference.get(f"{behind}-{cond}")
    paper = f" (report: {ref_a:.0f} vs {ref_b:.0f})" if ref_a and ref_b else ""
    line = f"{cond}: {LABEL[ahead]} {a:.0f} vs {LABEL[behind]} {b:.0f} kbit/s, ratio {a / b:.2f}{paper}"
    held, failed = ([line], []) if a > b else ([], [line])
    note = ""
    if "tolerance_pct" in claim and ref_a and ref_b:
        for cc, v, ref in ((ahead, a, ref_a), (behind, b, ref_b)):
            _vs_report(cond, cc, v, ref, float(claim["tolerance_pct"]), held, failed)
        rtt_s = 2 * float(cells.params.get((ahead, cond), {}).get("delay_ms", 0)) / 1000
        if rtt_s > 0:
            # kbit/s x s / 8 = KB in flight
            ours, theirs = [a * rtt_s / 8, b * rtt_s / 8], [ref_a * rtt_s / 8, ref_b * rtt_s / 8]
            note = (f"Over the {rtt_s * 1000:.0f}-ms base round trip, the report's numbers mean "
                    f"{theirs[0]:.0f} KB ({LABEL[ahead]}) and {theirs[1]:.0f} KB ({LABEL[behind]}) in flight "
                    f"on average, against {ours[0]:.0f} KB and {ours[1]:.0f} KB here.")
            if all(t < o / 2 for o, t in zip(ours, theirs, strict=True)):
                note += (" Something the report does not describe held its senders back: a window limit, "
                         "timeouts or a short test would; the report gives neither its test time nor its "
                         "socket buffer sizes.")
    return judge(claim, held, failed, [], note)


def cubic_ahead_test2(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Verdict:
    return _ahead(cells, claim, "t2", "cubic", reference)


def westwood_ahead_test3(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Verdict:
    return _ahead(cells, claim, "t3", "westwood", reference)


def westwood_oscillates_more(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Verdict:
    """Per test: cwnd's (max - min) / mean after the first congestion event, Westwood+ above CUBIC."""
    held, failed, missing = [], [], []
    for cond in ("t1", "t2", "t3"):
        cubic, west = _pair(cells, cond, OSCILLATION)
        if cubic is None or west is None:
            missing.append(f"{cond}: no congestion event measured for CUBIC or Westwood+")
            continue
        line = f"{cond}: cwnd (max - min) / mean: Westwood+ {west:.2f} vs CUBIC {cubic:.2f}"
        (held if west > cubic else failed).append(line)
    return judge(claim, held, failed, missing)


def mismatch_no_congestion(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Verdict:
    """In the mismatch cells the shaper never drops a packet (no congestion), yet cwnd grows far past
    the window the matched queue allows (`growth_factor` x that queue): no trial may drop, the
    smallest peak cwnd of the trials must clear the bar. cwnd falls there are spurious timeouts
    (the queue lets the RTT grow by seconds faster than the RTO follows): reported, not a failure."""
    factor = float(claim.get("growth_factor", 2))
    held, failed, missing = [], [], []
    for cc in CCS:
        drops = cells.value(cc, "mismatch", "q_forward_drops", "max")
        peak = cells.value(cc, "mismatch", "bulk0.cwnd_max", "min")
        matched = cells.params.get((cc, "t1"), {}).get("queue_pkts", 50)
        if drops is None or peak is None:
            missing.append(f"mismatch: {LABEL[cc]} not measured")
            continue
        falls = cells.value(cc, "mismatch", EVENTS, "max") or 0
        queue = cells.value(cc, "mismatch", "q_forward_backlog_pkts_max", "max") or 0
        line = (f"mismatch: {LABEL[cc]}: {drops:.0f} drops at the shaper; cwnd peaked at {peak:.0f} packets or more "
                f"(bar: {factor:g} x the {matched}-packet queue of Test 1); the queue grew to {queue:.0f} packets; "
                f"cwnd fell by a fifth {falls:.0f} times at most (spurious timeouts, no loss)")
        (held if drops == 0 and peak >= factor * matched else failed).append(line)
    return judge(claim, held, failed, missing)


CLAIMS: dict[str, Callable[[Cells, dict[str, Any], dict[str, float]], Verdict]] = {
    "equal_at_test1": equal_at_test1,
    "cubic_ahead_test2": cubic_ahead_test2,
    "westwood_ahead_test3": westwood_ahead_test3,
    "westwood_oscillates_more": westwood_oscillates_more,
    "mismatch_no_congestion": mismatch_no_congestion,
}


def reference_throughput(reference: dict[str, Any]) -> dict[str, float]:
    """{cell id: the report's kbit/s} from reference.tables.throughput."""
    return {cid: float(v[0]) for cid, v in reference["tables"]["throughput"]["values"].items()}


def evaluate(claims: list[dict[str, Any]], cells: Cells, reference: dict[str, Any]) -> list[Verdict]:
    ref = reference_throughput(reference)
    return [CLAIMS[c["id"]](cells, c, ref) for c in claims]


# ------------------------------------------------------------------------------------------
# Sweeps: where Westwood+ overtakes CUBIC
# ------------------------------------------------------------------------------------------

@dataclass
class SweepPoint:
    x: float
    cond: str
    mean: dict[str, float | None]
    std: dict[str, float | None]
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
        of their throughput or than their trials' spread (the two standard deviations added)."""
        adv = self.advantage_pct()
        if adv is None:
            return None
        c, w = self.mean["cubic"], self.mean["westwood"]
        spread = 100.0 * ((self.std["cubic"] or 0) + (self.std["westwood"] or 0)) / ((w + c) / 2)  # type: ignore[operator]
        if abs(adv) <= max(self.level_pct, spread):
            return None
        return "westwood" if adv > 0 else "cubic"


def sweep(cells: Cells, spec: dict[str, Any]) -> list[SweepPoint]:
    """The sweep's conditions in axis order, each with both algorithms' trimmed mean and spread."""
    points = []
    for cond in spec["conditions"]:
        params = cells.params.get(("cubic", cond)) or cells.params.get(("westwood", cond)) or {}
        if spec["axis"] not in params:
            continue
        points.append(SweepPoint(
            x=float(params[spec["axis"]]), cond=cond,
            mean={cc: cells.value(cc, cond, GOODPUT) for cc in CCS},
            std={cc: cells.value(cc, cond, GOODPUT, "std") for cc in CCS},
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
        who = f"{LABEL[lead]} ahead" if lead else f"level (within {band:g} % or the trials' spread)"
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
