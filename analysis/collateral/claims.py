"""Collateral Damage: the paper's claims, evaluated on the measured cells.

Each claim in config/collateral.yaml (`reference.claims`) has an id that names one function here.
A claim is judged at every condition its `where` lists (RTTs, flow counts: the ones the paper
states), one comparison per pair of algorithms and metric; analysis/verdicts.py judges each against
its trials' noise and gives the verdict. A condition that was not run is a missing comparison.
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from analysis import verdicts
from analysis.collateral import owd_bands
from analysis.verdicts import Comparison, Measure, Verdict, above, below, difference, inside, judge, measure, missing
from figures.common import claims_of
from tcprepro.config import PaperConfig

CCS = ("newreno", "htcp", "cubic")
LABEL = {"newreno": "NewReno", "htcp": "H-TCP", "cubic": "CUBIC",
         "htcp-adaptive": "H-TCP with adaptive backoff"}    # beyond the paper: analysis/collateral/investigation.py
MEDIAN, MEAN, OWD_P5 = "owd_median_ms", "owd_mean_ms", "owd_p5_ms"
EVENTS, REXMT, GOODPUT = "q_forward_full_events_per_min", "rexmt_data_pkts", "goodput_kbyte_s"


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
                out[(p.get("variant", p["cc"]), int(p["rtt_ms"]), int(p["flows"]))] = cell
        return cls(out)

    def m(self, cc: str, rtt: int, flows: int, metric: str) -> Measure | None:
        return measure(self.by_key.get((cc, rtt, flows)), metric)


def where(rtt: int, flows: int) -> str:
    return f"{rtt} ms, {flows} flow{'s' if flows > 1 else ''}"


def _conditions(claim: dict[str, Any]) -> list[tuple[int, int]]:
    w = claim["where"]
    return list(itertools.product(w["rtt_ms"], w["flows"]))


def _v(m: Measure | None) -> str:
    return "-" if m is None else f"{m.value:.1f}"


def _order(cells: Cells, rtt: int, flows: int, metric: str, what: str, unit: str, a: str, b: str,
           higher: bool = True) -> Comparison:
    """The claim needs `a` above (higher) or below `b` on one metric at one condition."""
    ma, mb = cells.m(a, rtt, flows, metric), cells.m(b, rtt, flows, metric)
    text = f"{LABEL[a]} {_v(ma)} vs {LABEL[b]} {_v(mb)} {unit} {what}"
    return (above if higher else below)(where(rtt, flows), text, ma, mb, unit)


def cubic_most_latency(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Table 2, sections 4.2 and 5: CUBIC's median and mean OWD above NewReno's and H-TCP's."""
    for rtt, flows in _conditions(claim):
        for metric, what in ((MEDIAN, "median"), (MEAN, "mean")):
            for other in ("newreno", "htcp"):
                yield _order(cells, rtt, flows, metric, what, "ms", "cubic", other)


def htcp_below_newreno_1_2(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 5: with one and two flows H-TCP's median OWD below NewReno's."""
    for rtt, flows in _conditions(claim):
        yield _order(cells, rtt, flows, MEDIAN, "median", "ms", "htcp", "newreno", higher=False)


def htcp_above_newreno_5(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Sections 4.2 and 5: with five flows H-TCP's median OWD is NewReno-like, above it (459.6 vs 445.5)."""
    for rtt, flows in _conditions(claim):
        yield _order(cells, rtt, flows, MEDIAN, "median", "ms", "htcp", "newreno")


def latency_rises_with_flows(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 5: from two flows to five the median OWD rose under every algorithm."""
    lo, hi = claim["where"]["flows"]
    for rtt in claim["where"]["rtt_ms"]:
        for cc in CCS:
            a, b = cells.m(cc, rtt, hi, MEDIAN), cells.m(cc, rtt, lo, MEDIAN)
            yield above(f"{rtt} ms, {LABEL[cc]}", f"median {_v(a)} ms with {hi} flows vs {_v(b)} with {lo}", a, b, "ms")


def queue_full_events(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Figure 4: H-TCP has the larger number of queue-full events with one and two flows, fewer
    than CUBIC with five."""
    for rtt, flows in _conditions(claim):
        if flows in claim["where"]["htcp_most_at"]:
            for other in ("newreno", "cubic"):
                yield _order(cells, rtt, flows, EVENTS, "queue-full events/min", "", "htcp", other)
        else:
            yield _order(cells, rtt, flows, EVENTS, "queue-full events/min", "", "htcp", "cubic", higher=False)


def cubic_events_grow_fastest(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Figure 4: CUBIC's queue-full events grow faster with the number of flows than H-TCP's or
    NewReno's (increase from the fewest flows to the most)."""
    lo, hi = min(claim["where"]["flows"]), max(claim["where"]["flows"])
    for rtt in claim["where"]["rtt_ms"]:
        rise = {cc: difference(cells.m(cc, rtt, hi, EVENTS), cells.m(cc, rtt, lo, EVENTS)) for cc in CCS}
        for other in ("newreno", "htcp"):
            text = (f"rise in queue-full events/min from {lo} to {hi} flows: CUBIC {_v(rise['cubic'])} "
                    f"vs {LABEL[other]} {_v(rise[other])}")
            yield above(f"{rtt} ms", text, rise["cubic"], rise[other])


def more_retransmissions(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Figure 5: H-TCP and CUBIC both retransmit more packets than NewReno."""
    for rtt, flows in _conditions(claim):
        for cc in ("htcp", "cubic"):
            yield _order(cells, rtt, flows, REXMT, "retransmitted", "packets", cc, "newreno")


def htcp_adaptive_backoff(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Beyond the paper: with Linux's default adaptive backoff H-TCP's median OWD is above its
    median with the paper's setting, and above NewReno's where the paper's H-TCP is below it."""
    for rtt, flows in _conditions(claim):
        yield _order(cells, rtt, flows, MEDIAN, "median OWD", "ms", "htcp-adaptive", "htcp")
    for rtt in claim["where"]["rtt_ms"]:
        for flows in claim["where"]["above_newreno_at"]:
            yield _order(cells, rtt, flows, MEDIAN, "median OWD", "ms", "htcp-adaptive", "newreno")


def goodput_same(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 4.1: the three algorithms' aggregate goodput much the same: the spread between the
    highest and the lowest within the bar, in % of their mean."""
    tol = float(claim["bars"]["tolerance_pct"]["value"])
    for rtt, flows in _conditions(claim):
        ms = {cc: cells.m(cc, rtt, flows, GOODPUT) for cc in CCS}
        vals = ", ".join(f"{LABEL[cc]} {_v(m)}" for cc, m in ms.items())
        got = [m for m in ms.values() if m is not None]
        if len(got) < len(ms):
            yield missing(where(rtt, flows), f"goodput {vals} KB/s: not all three measured")
            continue
        mid = sum(m.value for m in got) / 3
        hi = max(got, key=lambda m: m.value)
        lo = min(got, key=lambda m: m.value)
        spread = difference(hi, lo)
        spread_pct = spread.scaled(100 / mid) if spread else None
        yield below(where(rtt, flows), f"goodput {vals} KB/s, spread {_v(spread_pct)} % (bar {tol:g} %)",
                    spread_pct, tol, "%")


def cubic_owd_cdf_shape(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Figure 3a, section 4.2: with one flow at 50 ms CUBIC's OWD CDF rises steeply at about 400 ms,
    then slows between 440 and 480 ms before rising again.

    The steep rise is a step: below it the CDF stays near zero, so the step sits where the CDF leaves
    zero, at the 5th percentile of the OWD, judged within the claim's bar of the paper's position.
    The slowing and the rise after it are slopes: the CDF rises less per ms over the slowing band
    (440-480 ms) than over the steep band before it (400-440 ms) and than over the rest of the curve
    after it (480 ms to its end, the trial's largest OWD). Each slope is the packets' density in the
    band (analysis/collateral/owd_bands.py); a pair of bands is compared trial by trial, so the
    trials' own spread of the difference is the noise."""
    w = claim["where"]
    step, bands = float(w["step_ms"]), w["bands_ms"]
    tol = float(claim["bars"]["step_tolerance_ms"]["value"])
    steep, slows, again = ((b[0], b[1]) for b in (bands["steep"], bands["slows"], bands["again"]))

    def band_text(b: tuple[float, float | None]) -> str:
        return f"{b[0]:g} ms to the curve's end" if b[1] is None else f"{b[0]:g}-{b[1]:g} ms"

    for rtt, flows in _conditions(claim):
        cell = cells.by_key.get(("cubic", rtt, flows))
        p5 = cells.m("cubic", rtt, flows, OWD_P5)
        yield inside(where(rtt, flows), f"CUBIC's step: 5th-percentile OWD {_v(p5)} ms (paper: about {step:g} ms, "
                                        f"{step - tol:g} to {step + tol:g})", p5, step - tol, step + tol, "ms")
        slow = measure(cell, owd_bands.metric_name(slows))
        for other, what in ((steep, "steeper before the slowing"), (again, "steeper again after it")):
            theirs = measure(cell, owd_bands.metric_name(other))
            names = [owd_bands.metric_name(other), owd_bands.metric_name(slows)]
            diff = verdicts.per_trial(cell, names, lambda a, b: a - b)
            text = (f"CUBIC's CDF {what}: {_density(theirs)} of the packets per ms over {band_text(other)} against "
                    f"{_density(slow)} over {band_text(slows)}")
            yield above(where(rtt, flows), text, None if diff is None else diff.scaled(100), 0.0, "%/ms")


def _density(m: Measure | None) -> str:
    return "-" if m is None else f"{100 * m.value:.3f} %"


Evaluator = Callable[[Cells, dict[str, Any]], Iterable[Comparison]]
CLAIMS: dict[str, Evaluator] = {f.__name__: f for f in (
    goodput_same, cubic_most_latency, htcp_below_newreno_1_2, htcp_above_newreno_5, latency_rises_with_flows,
    queue_full_events, cubic_events_grow_fastest, more_retransmissions, cubic_owd_cdf_shape,
    htcp_adaptive_backoff)}


def judge_claims(claims: list[dict[str, Any]], cells: Cells) -> list[Verdict]:
    """Every configured claim's verdict; a claim id with no evaluator is a configuration error."""
    unknown = [c["id"] for c in claims if c["id"] not in CLAIMS]
    if unknown:
        raise ValueError(f"claims with no evaluator in analysis/collateral/claims.py: {', '.join(unknown)}; "
                         f"known: {', '.join(CLAIMS)}")
    return [judge(c, CLAIMS[c["id"]](cells, c)) for c in claims]


def evaluate(cells: dict[str, dict[str, Any]], cfg: PaperConfig, profile: str) -> list[Verdict]:
    """Every claim's verdict from cells by id (cell.json files, or a committed table read back)."""
    params = {cid: c.params for cid, c in cfg.cells_by_id.items()}
    return judge_claims(claims_of(cfg, profile), Cells.from_cells(cells, params))
