"""Collateral Damage: the paper's claims, evaluated on the measured cells.

Each claim in config/collateral.yaml (`reference.claims`) has an id that names one evaluator here.
A claim is judged at every condition its `where` lists (RTTs, flow counts: the ones the paper
states), one comparison per pair of algorithms and metric; analysis/verdicts.py judges each against
its trials' noise and gives the verdict. A condition that was not run is a missing comparison.
Magnitudes are bands around the paper's numbers (Tables 1 and 2, read from the config's tables),
their widths the claim's bars.
"""
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analysis import verdicts
from analysis.aggregate import trimmed_stats
from analysis.collateral import modes, owd_bands
from analysis.report import paper_run
from analysis.report.paper_run import claims_of
from analysis.verdicts import (
    MIN_TRIALS,
    Comparison,
    Measure,
    Verdict,
    above,
    below,
    difference,
    inside,
    judge,
    measure,
    missing,
    trial_values,
)
from configuration.load import PaperConfig
from experiments import load_paper

CCS = ("newreno", "htcp", "cubic")
# The investigation's variant of H-TCP (beyond the paper: analysis/collateral/investigation.py) is
# no algorithm of the registry, so it is labelled here; the paper's algorithms by the registry.
VARIANT_LABEL = {"htcp-adaptive": "H-TCP with adaptive backoff"}
MEDIAN, MEAN, STD, OWD_P5 = "owd_median_ms", "owd_mean_ms", "owd_std_ms", "owd_p5_ms"
EVENTS, REXMT, GOODPUT, UDP_LOSS = ("q_forward_full_events_per_min", "rexmt_data_pkts", "goodput_kbyte_s",
                                    "voip_loss_frac")
STAT_NAME = {MEDIAN: "median", MEAN: "mean", STD: "standard deviation"}


def cc_label(cc: str) -> str:
    """How a claim names an algorithm or the investigation's variant."""
    return VARIANT_LABEL.get(cc) or paper_run.cc_label(cc)


@functools.cache
def _paper_tables() -> dict[str, Any]:
    return dict(load_paper("collateral").data["reference"].get("tables") or {})


@dataclass
class Cells:
    """Measured cells indexed by (cc, rtt, flows), and the paper's tables they are set beside."""

    by_key: dict[tuple[str, int, int], dict[str, Any]]
    tables: dict[str, Any] = field(default_factory=_paper_tables)

    @classmethod
    def from_cells(cls, cells: dict[str, dict[str, Any]], params: dict[str, dict[str, Any]],
                   tables: dict[str, Any] | None = None) -> Cells:
        out = {}
        for cell_id, cell in cells.items():
            p = params.get(cell_id)
            if p and cell.get("n_valid", 0) > 0:
                out[(p.get("variant", p["cc"]), int(p["rtt_ms"]), int(p["flows"]))] = cell
        return cls(out) if tables is None else cls(out, tables)

    def m(self, cc: str, rtt: int, flows: int, metric: str) -> Measure | None:
        return measure(self.by_key.get((cc, rtt, flows)), metric)

    def paper(self, table: str, column: str, cc: str, rtt: int, flows: int) -> float | None:
        """The paper's number in one of its tables (None where it prints none)."""
        spec = self.tables.get(table) or {}
        row = (spec.get("values") or {}).get(f"{cc}-rtt{rtt}-f{flows}")
        names = list(spec.get("columns") or {})
        return None if row is None or column not in names else float(row[names.index(column)])


def where(rtt: int, flows: int) -> str:
    return f"{rtt} ms, {flows} flow{'s' if flows > 1 else ''}"


def _conditions(claim: dict[str, Any]) -> list[tuple[int, int]]:
    w = claim["where"]
    return list(itertools.product(w["rtt_ms"], w["flows"]))


def _steps(claim: dict[str, Any]) -> list[tuple[int, int]]:
    """Consecutive flow counts of the claim's `where` (1 to 2, 2 to 5)."""
    flows = sorted(claim["where"]["flows"])
    return list(itertools.pairwise(flows))


def _bar(claim: dict[str, Any], name: str) -> float:
    return float(claim["bars"][name]["value"])


def _v(m: Measure | None, digits: int = 1) -> str:
    return "-" if m is None else f"{m.value:.{digits}f}"


def _abs(m: Measure | None) -> Measure | None:
    return None if m is None else Measure(abs(m.value), m.noise, m.n)


def _order(cells: Cells, rtt: int, flows: int, metric: str, what: str, unit: str, a: str, b: str,
           higher: bool = True, at: str | None = None) -> Comparison:
    """The claim needs `a` above (higher) or below `b` on one metric at one condition."""
    ma, mb = cells.m(a, rtt, flows, metric), cells.m(b, rtt, flows, metric)
    text = f"{cc_label(a)} {_v(ma)} vs {cc_label(b)} {_v(mb)} {unit} {what}"
    return (above if higher else below)(at or where(rtt, flows), text, ma, mb, unit)


# ---------------------------------------------------------------------------------------------
# Goodput and what differs more than it
# ---------------------------------------------------------------------------------------------

def _spread_pct(ms: dict[str, Measure | None]) -> Measure | None:
    """Highest less lowest of the algorithms' values, in % of their mean (noise: the larger cell's)."""
    got = [m for m in ms.values() if m is not None]
    if len(got) < len(ms) or not got:
        return None
    mid = sum(m.value for m in got) / len(got)
    spread = difference(max(got, key=lambda m: m.value), min(got, key=lambda m: m.value))
    return spread.scaled(100 / mid) if spread and mid > 0 else None


def goodput_same(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 4.1: the three algorithms' aggregate goodput much the same: the spread between the
    highest and the lowest within the bar, in % of their mean."""
    tol = _bar(claim, "tolerance_pct")
    for rtt, flows in _conditions(claim):
        ms = {cc: cells.m(cc, rtt, flows, GOODPUT) for cc in CCS}
        vals = ", ".join(f"{cc_label(cc)} {_v(m)}" for cc, m in ms.items())
        spread = _spread_pct(ms)
        if spread is None:
            yield missing(where(rtt, flows), f"goodput {vals} KB/s: not all three measured")
            continue
        yield below(where(rtt, flows), f"goodput {vals} KB/s, spread {_v(spread)} % (bar {tol:g} %)",
                    spread, tol, "%")


def latency_differentiates_more(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Abstract: the latency each variant induces differentiates the three more than goodput: their
    spread in % of their mean is larger in the median (and the standard deviation) of the UDP flow's
    OWD than in aggregate goodput."""
    for rtt, flows in _conditions(claim):
        good = _spread_pct({cc: cells.m(cc, rtt, flows, GOODPUT) for cc in CCS})
        for metric in (MEDIAN, STD):
            owd = _spread_pct({cc: cells.m(cc, rtt, flows, metric) for cc in CCS})
            text = (f"the three algorithms' spread in OWD {STAT_NAME[metric]} {_v(owd)} % of their mean "
                    f"vs in goodput {_v(good, 2)} %")
            yield above(where(rtt, flows), text, owd, good, "%")


# ---------------------------------------------------------------------------------------------
# Latency: orders and magnitudes of the differences
# ---------------------------------------------------------------------------------------------

def cubic_latency_gap(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Abstract ("far more") and section 5 ("noticeably more"): CUBIC's median and mean OWD above
    NewReno's and H-TCP's by at least the smallest gap the paper itself calls so (the claim's bars)."""
    for rtt, flows in _conditions(claim):
        for metric, bar in ((MEDIAN, _bar(claim, "gap_median_ms")), (MEAN, _bar(claim, "gap_mean_ms"))):
            cubic = cells.m("cubic", rtt, flows, metric)
            for other in ("newreno", "htcp"):
                gap = difference(cubic, cells.m(other, rtt, flows, metric))
                text = (f"CUBIC {_v(cubic)} vs {cc_label(other)} {_v(cells.m(other, rtt, flows, metric))} ms "
                        f"{STAT_NAME[metric]}: CUBIC above by {_v(gap)} ms (bar {bar:g})")
                yield above(where(rtt, flows), text, gap, bar, "ms")


def htcp_below_newreno_1_2(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 5: with one and two flows H-TCP's median OWD below both NewReno's and CUBIC's."""
    for other in ("newreno", "cubic"):
        for rtt, flows in _conditions(claim):
            yield _order(cells, rtt, flows, MEDIAN, "median", "ms", "htcp", other, higher=False)


def htcp_newreno_like(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 4.2: as flows are added H-TCP's median OWD comes nearer NewReno's (its distance from it
    shrinks at each step), and with five flows it is NewReno-like: within the bar of it, either way."""
    like = _bar(claim, "like_ms")
    at = int(claim["where"]["like_at"])
    for rtt in claim["where"]["rtt_ms"]:
        gap = {n: difference(cells.m("htcp", rtt, n, MEDIAN), cells.m("newreno", rtt, n, MEDIAN))
               for n in claim["where"]["flows"]}
        for lo, hi in _steps(claim):
            text = (f"H-TCP's median {_v(_abs(gap[hi]))} ms from NewReno's with {hi} flows vs "
                    f"{_v(_abs(gap[lo]))} with {lo}")
            yield below(f"{rtt} ms, from {lo} to {hi} flows", text, _abs(gap[hi]), _abs(gap[lo]), "ms")
        text = (f"H-TCP {_v(cells.m('htcp', rtt, at, MEDIAN))} vs NewReno {_v(cells.m('newreno', rtt, at, MEDIAN))} "
                f"ms median: {_v(gap[at])} ms apart (NewReno-like: within {like:g})")
        yield inside(where(rtt, at), text, gap[at], -like, like, "ms")


def latency_rises_with_flows(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 5: from two flows to five the median OWD rose under every algorithm."""
    lo, hi = claim["where"]["flows"]
    for rtt in claim["where"]["rtt_ms"]:
        for cc in CCS:
            a, b = cells.m(cc, rtt, hi, MEDIAN), cells.m(cc, rtt, lo, MEDIAN)
            yield above(f"{rtt} ms, {cc_label(cc)}", f"median {_v(a)} ms with {hi} flows vs {_v(b)} with {lo}",
                        a, b, "ms")


def rtt100_plots_identical(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 4.2: the 100-ms plots looked identical to the 50-ms ones: each algorithm's median and
    mean OWD moves between the two RTTs by no more than the paper's own largest shift (the bars)."""
    lo, hi = sorted(claim["where"]["rtt_ms"])
    for cc in CCS:
        for flows in claim["where"]["flows"]:
            for metric, bar in ((MEDIAN, _bar(claim, "median_shift_ms")), (MEAN, _bar(claim, "mean_shift_ms"))):
                a, b = cells.m(cc, hi, flows, metric), cells.m(cc, lo, flows, metric)
                shift = difference(a, b)
                text = (f"{STAT_NAME[metric]} {_v(a)} ms at {hi} ms vs {_v(b)} at {lo} ms: shift {_v(shift)} "
                        f"(identical: within {bar:g})")
                yield inside(f"{cc_label(cc)}, {flows} flow{'s' if flows > 1 else ''}", text, shift, -bar, bar, "ms")


def udp_loss_insignificant(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 4.2: a statistically insignificant share of the UDP packets lost: below the bar."""
    bar = _bar(claim, "max_loss_pct")
    for rtt, flows in _conditions(claim):
        for cc in CCS:
            m = cells.m(cc, rtt, flows, UDP_LOSS)
            lost = None if m is None else m.scaled(100)
            yield below(f"{where(rtt, flows)}, {cc_label(cc)}", f"UDP packets lost {_v(lost, 4)} % (bar {bar:g} %)",
                        lost, bar, "%")


# ---------------------------------------------------------------------------------------------
# Figure 3a's shape
# ---------------------------------------------------------------------------------------------

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
    tol = _bar(claim, "step_tolerance_ms")
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


# ---------------------------------------------------------------------------------------------
# Congestion events and retransmissions (Figures 4 and 5)
# ---------------------------------------------------------------------------------------------

def events_rise_with_flows(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Sections 4.2-4.3: more concurrent flows, more frequent congestion events at the bottleneck
    (queue-full events per minute), for every algorithm, at each step of the flow count."""
    for rtt in claim["where"]["rtt_ms"]:
        for cc in CCS:
            for lo, hi in _steps(claim):
                a, b = cells.m(cc, rtt, hi, EVENTS), cells.m(cc, rtt, lo, EVENTS)
                yield above(f"{rtt} ms, {cc_label(cc)}, {lo} to {hi} flows",
                            f"queue-full events/min {_v(a)} with {hi} flows vs {_v(b)} with {lo}", a, b)


def htcp_newreno_mode_share(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Sections 4.2-4.3: the H-TCP flows spend a larger share of their time in the first second
    after a congestion event (NewReno's growth) at each step of the flow count
    (analysis/collateral/modes.py)."""
    window = float(claim["where"]["newreno_mode_s"])
    metric = modes.metric_name(window)
    for rtt in claim["where"]["rtt_ms"]:
        for lo, hi in _steps(claim):
            a, b = cells.m("htcp", rtt, hi, metric), cells.m("htcp", rtt, lo, metric)
            pa, pb = (None if m is None else m.scaled(100) for m in (a, b))
            yield above(f"{rtt} ms, {lo} to {hi} flows",
                        f"H-TCP flows' time within {window:g} s of a congestion event {_v(pa)} % with {hi} flows "
                        f"vs {_v(pb)} % with {lo}", pa, pb, "%")


def htcp_most_queue_full_1_2(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Figure 4: with one and two flows H-TCP has the larger number of queue-full events."""
    for rtt, flows in _conditions(claim):
        for other in ("newreno", "cubic"):
            yield _order(cells, rtt, flows, EVENTS, "queue-full events/min", "", "htcp", other)


def htcp_fewer_queue_full_5(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Figure 4: with five flows H-TCP has fewer queue-full events than CUBIC."""
    for rtt, flows in _conditions(claim):
        yield _order(cells, rtt, flows, EVENTS, "queue-full events/min", "", "htcp", "cubic", higher=False)


def cubic_events_grow_fastest(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Figure 4: CUBIC's queue-full events grow faster with the number of flows than H-TCP's or
    NewReno's (increase from the fewest flows to the most)."""
    lo, hi = min(claim["where"]["flows"]), max(claim["where"]["flows"])
    for rtt in claim["where"]["rtt_ms"]:
        rise = {cc: difference(cells.m(cc, rtt, hi, EVENTS), cells.m(cc, rtt, lo, EVENTS)) for cc in CCS}
        for other in ("newreno", "htcp"):
            text = (f"rise in queue-full events/min from {lo} to {hi} flows: CUBIC {_v(rise['cubic'])} "
                    f"vs {cc_label(other)} {_v(rise[other])}")
            yield above(f"{rtt} ms, against {cc_label(other)}", text, rise["cubic"], rise[other])


def more_retransmissions(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Figure 5: H-TCP and CUBIC both retransmit more packets than NewReno."""
    for rtt, flows in _conditions(claim):
        for cc in ("htcp", "cubic"):
            yield _order(cells, rtt, flows, REXMT, "retransmitted", "packets", cc, "newreno")


def _correlations(cells: list[dict[str, Any] | None], x: str, y: str) -> list[float]:
    """Pearson's r between two metrics over the cells, once per trial number every cell holds both
    for: each draw takes one trial of every cell (trials of one cell are paired across metrics)."""
    columns = [(trial_values(c, x), trial_values(c, y)) for c in cells]
    common = set.intersection(*(set(a) & set(b) for a, b in columns)) if columns else set()
    out = []
    for k in sorted(common):
        xs, ys = np.array([a[k] for a, _ in columns]), np.array([b[k] for _, b in columns])
        if xs.std() > 0 and ys.std() > 0:
            out.append(float(np.corrcoef(xs, ys)[0, 1]))
    return out


def events_track_retransmissions(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Section 4.3: queue-full events and retransmissions closely correlated over the cells of each
    RTT (Figures 4 and 5a-b): Pearson's r at least the bar. r is computed once per trial number,
    one trial of every cell each time, and judged as the trimmed mean of those draws against their
    range."""
    bar = _bar(claim, "min_correlation")
    for rtt in claim["where"]["rtt_ms"]:
        group = [cells.by_key.get((cc, rtt, n)) for cc in CCS for n in claim["where"]["flows"]]
        text = f"r between queue-full events/min and retransmitted packets over the {len(group)} cells"
        if any(c is None for c in group):
            yield missing(f"{rtt} ms", f"{text}: not every cell measured")
            continue
        rs = _correlations(group, EVENTS, REXMT)
        r = Measure.of_values(rs) if rs else None
        yield above(f"{rtt} ms", f"{text}: {_v(r, 3)} (bar {bar:g})", r, bar)


# ---------------------------------------------------------------------------------------------
# Tables 1 and 2: the printed numbers, each a band around the paper's
# ---------------------------------------------------------------------------------------------

def _cell_where(rtt: int, flows: int, cc: str) -> str:
    return f"{where(rtt, flows)}, {cc_label(cc)}"


def _table_cells(cells: Cells, claim: dict[str, Any]) -> Iterable[tuple[int, int, str, float | None]]:
    w = claim["where"]
    for rtt, flows in _conditions(claim):
        for cc in CCS:
            yield rtt, flows, cc, cells.paper(w["table"], w["column"], cc, rtt, flows)


def table1_goodput(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Table 1's means: ours within the paper's printed half-digit plus the bar's multiple of its own
    trial-to-trial deviation, either side of its mean."""
    w, k, half = claim["where"], _bar(claim, "deviations"), _bar(claim, "printed_half_digit_kbyte_s")
    for rtt, flows, cc, paper in _table_cells(cells, claim):
        sd = cells.paper(w["table"], w["deviation_column"], cc, rtt, flows)
        m = cells.m(cc, rtt, flows, GOODPUT)
        if paper is None or sd is None:
            yield missing(_cell_where(rtt, flows, cc), "goodput: the paper prints none")
            continue
        h = half + k * sd
        text = f"goodput {_v(m, 2)} KB/s (paper {paper:g}, band {paper - h:.2f} to {paper + h:.2f})"
        yield inside(_cell_where(rtt, flows, cc), text, m, paper - h, paper + h, "KB/s")


def _trial_deviation(cell: dict[str, Any] | None, metric: str) -> Measure | None:
    """The sample standard deviation of the cell's kept trials (the papers' trimmed three), with no
    noise of its own: it has no trial values to range over (the claim's band is its sampling spread)."""
    values = list(trial_values(cell, metric).values())
    if not values:
        return None
    std = trimmed_stats(values)["std"]
    return None if std is None else Measure(float(std), 0.0 if len(values) >= MIN_TRIALS else None, len(values))


def table1_deviation(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Table 1's deviations: ours within the square root of the bar's variance ratio of the paper's,
    either way, the paper's printed half-digit widening it."""
    factor, half = math.sqrt(_bar(claim, "variance_ratio")), _bar(claim, "printed_half_digit_kbyte_s")
    for rtt, flows, cc, paper in _table_cells(cells, claim):
        m = _trial_deviation(cells.by_key.get((cc, rtt, flows)), GOODPUT)
        if paper is None:
            yield missing(_cell_where(rtt, flows, cc), "goodput deviation: the paper prints none")
            continue
        lo, hi = max(paper - half, 0.0) / factor, (paper + half) * factor
        text = f"goodput deviation {_v(m, 3)} KB/s (paper {paper:g}, band {lo:.4f} to {hi:.3f})"
        yield inside(_cell_where(rtt, flows, cc), text, m, lo, hi, "KB/s")


def table2_column(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Table 2's medians, means or deviations (the claim's `column`): ours within the bar of the
    paper's, either side."""
    h = _bar(claim, "half_width_ms")
    metric = {"median": MEDIAN, "mean": MEAN, "std": STD}[claim["where"]["column"]]
    for rtt, flows, cc, paper in _table_cells(cells, claim):
        m = cells.m(cc, rtt, flows, metric)
        if paper is None:
            yield missing(_cell_where(rtt, flows, cc), f"OWD {STAT_NAME[metric]}: the paper prints none")
            continue
        text = f"OWD {STAT_NAME[metric]} {_v(m)} ms (paper {paper:g}, band {paper - h:g} to {paper + h:g})"
        yield inside(_cell_where(rtt, flows, cc), text, m, paper - h, paper + h, "ms")


# ---------------------------------------------------------------------------------------------
# Beyond the paper
# ---------------------------------------------------------------------------------------------

def htcp_adaptive_backoff(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Beyond the paper: with Linux's default adaptive backoff H-TCP's median OWD is above its
    median with the paper's setting, and above NewReno's where the paper's H-TCP is below it."""
    for rtt, flows in _conditions(claim):
        yield _order(cells, rtt, flows, MEDIAN, "median OWD", "ms", "htcp-adaptive", "htcp")
    for rtt in claim["where"]["rtt_ms"]:
        for flows in claim["where"]["above_newreno_at"]:
            yield _order(cells, rtt, flows, MEDIAN, "median OWD", "ms", "htcp-adaptive", "newreno")


Evaluator = Callable[[Cells, dict[str, Any]], Iterable[Comparison]]
CLAIMS: dict[str, Evaluator] = {
    **{f.__name__: f for f in (
        goodput_same, latency_differentiates_more, htcp_below_newreno_1_2, htcp_newreno_like,
        latency_rises_with_flows, rtt100_plots_identical, udp_loss_insignificant, cubic_owd_cdf_shape,
        events_rise_with_flows, htcp_newreno_mode_share, htcp_most_queue_full_1_2, htcp_fewer_queue_full_5,
        cubic_events_grow_fastest, more_retransmissions, events_track_retransmissions, table1_goodput,
        table1_deviation, htcp_adaptive_backoff)},
    # one evaluator for claims the paper words alike, each with its own conditions and bars
    "cubic_far_more_latency": cubic_latency_gap,
    "cubic_noticeably_more_latency": cubic_latency_gap,
    "table2_median": table2_column,
    "table2_mean": table2_column,
    "table2_deviation": table2_column,
}


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
    tables = cfg.data["reference"].get("tables") or {}
    return judge_claims(claims_of(cfg, profile), Cells.from_cells(cells, params, tables))
