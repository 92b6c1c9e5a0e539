"""Collateral Damage: the paper's claims, evaluated on the measured cells.

Each claim in config/collateral.yaml (`reference.claims`) has an id that names one function here.
A claim is judged per comparison group (RTT x number of flows) on the cells' trimmed means, and
its verdict says which comparisons held, with the numbers: `reproduced` when all held, `partly`
when some did, `not reproduced` when none did, `not evaluated` when the cells needed were not run.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analysis.compare import cell_value
from analysis.verdicts import Verdict, judge

CCS = ("newreno", "htcp", "cubic")
LABEL = {"newreno": "NewReno", "htcp": "H-TCP", "cubic": "CUBIC"}


@dataclass
class Cells:
    """Measured cells indexed by (cc, rtt, flows)."""

    by_key: dict[tuple[str, int, int], dict[str, Any]]

    @classmethod
    def from_cells(cls, cells: dict[str, dict[str, Any]], params: dict[str, dict[str, Any]]) -> Cells:
        out = {}
        for cell_id, cell in cells.items():
            p = params.get(cell_id)
            if p and cell.get("n_valid", 0) > 0:
                out[(p["cc"], int(p["rtt_ms"]), int(p["flows"]))] = cell
        return cls(out)

    def value(self, cc: str, rtt: int, flows: int, metric: str) -> float | None:
        return cell_value(self.by_key.get((cc, rtt, flows)), metric, "mean")

    def groups(self) -> list[tuple[int, int]]:
        return sorted({(rtt, flows) for _, rtt, flows in self.by_key})


def _where(rtt: int, flows: int) -> str:
    return f"{rtt} ms, {flows} flow{'s' if flows > 1 else ''}"


def _greater(cells: Cells, claim: dict[str, Any], metric: str, unit: str, bigger: str, smaller: tuple[str, ...],
             groups: list[tuple[int, int]]) -> Verdict:
    held, failed, missing = [], [], []
    for rtt, flows in groups:
        a = cells.value(bigger, rtt, flows, metric)
        for other in smaller:
            b = cells.value(other, rtt, flows, metric)
            if a is None or b is None:
                missing.append(f"{_where(rtt, flows)}: {LABEL[bigger]} or {LABEL[other]} not measured")
                continue
            line = f"{_where(rtt, flows)}: {LABEL[bigger]} {a:.1f} vs {LABEL[other]} {b:.1f} {unit}"
            (held if a > b else failed).append(line)
    return judge(claim, held, failed, missing)


def cubic_most_latency(cells: Cells, claim: dict[str, Any]) -> Verdict:
    v_med = _greater(cells, claim, "owd_median_ms", "ms median", "cubic", ("newreno", "htcp"), cells.groups())
    v_mean = _greater(cells, claim, "owd_mean_ms", "ms mean", "cubic", ("newreno", "htcp"), cells.groups())
    return judge(claim, v_med.held + v_mean.held, v_med.failed + v_mean.failed, sorted(set(v_med.missing)))


def htcp_below_newreno_1_2(cells: Cells, claim: dict[str, Any]) -> Verdict:
    groups = [g for g in cells.groups() if g[1] in (1, 2)]
    return _greater(cells, claim, "owd_median_ms", "ms median", "newreno", ("htcp",), groups)


def goodput_same(cells: Cells, claim: dict[str, Any]) -> Verdict:
    tol = float(claim.get("tolerance_pct", 3))
    held, failed, missing = [], [], []
    for rtt, flows in cells.groups():
        vals = {cc: cells.value(cc, rtt, flows, "goodput_kbyte_s") for cc in CCS}
        if any(v is None for v in vals.values()):
            missing.append(f"{_where(rtt, flows)}: not all three algorithms measured")
            continue
        lo, hi = min(vals.values()), max(vals.values())
        spread = 100.0 * (hi - lo) / ((hi + lo) / 2)
        line = (f"{_where(rtt, flows)}: " + ", ".join(f"{LABEL[c]} {v:.1f}" for c, v in vals.items())
                + f" KB/s, spread {spread:.1f} % (tolerance {tol:g} %)")
        (held if spread <= tol else failed).append(line)
    return judge(claim, held, failed, missing)


def more_retransmissions(cells: Cells, claim: dict[str, Any]) -> Verdict:
    v_h = _greater(cells, claim, "rexmt_data_pkts", "packets", "htcp", ("newreno",), cells.groups())
    v_c = _greater(cells, claim, "rexmt_data_pkts", "packets", "cubic", ("newreno",), cells.groups())
    return judge(claim, v_h.held + v_c.held, v_h.failed + v_c.failed, v_h.missing + v_c.missing)


def pearson(xs: list[float], ys: list[float]) -> float | None:
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def full_events_track_retransmissions(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Across cells: queue-full events per minute (middle 60 s) against retransmitted packets."""
    need = float(claim.get("min_correlation", 0.8))
    xs, ys, labels = [], [], []
    for (cc, rtt, flows), _ in sorted(cells.by_key.items()):
        ev = cells.value(cc, rtt, flows, "q_forward_full_events_per_min")
        rx = cells.value(cc, rtt, flows, "rexmt_data_pkts")
        if ev is not None and rx is not None:
            xs.append(ev)
            ys.append(rx)
            labels.append(f"{LABEL[cc]} {_where(rtt, flows)}")
    r = pearson(xs, ys)
    if r is None:
        return judge(claim, [], [], ["fewer than three cells with both measures"])
    line = f"Pearson r = {r:.2f} over {len(xs)} cells (needed >= {need:g})"
    return judge(claim, [line] if r >= need else [], [] if r >= need else [line], [])


CLAIMS: dict[str, Callable[[Cells, dict[str, Any]], Verdict]] = {
    "cubic_most_latency": cubic_most_latency,
    "htcp_below_newreno_1_2": htcp_below_newreno_1_2,
    "goodput_same": goodput_same,
    "more_retransmissions": more_retransmissions,
    "full_events_track_retransmissions": full_events_track_retransmissions,
}


def evaluate(claims: list[dict[str, Any]], cells: Cells) -> list[Verdict]:
    """Every configured claim's verdict; a claim id with no evaluator is a configuration error."""
    unknown = [c["id"] for c in claims if c["id"] not in CLAIMS]
    if unknown:
        raise ValueError(f"claims with no evaluator in analysis/collateral.py: {', '.join(unknown)}; "
                         f"known: {', '.join(CLAIMS)}")
    return [CLAIMS[c["id"]](cells, c) for c in claims]
