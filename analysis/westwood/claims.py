"""Westwood+ vs CUBIC (Gerhard, Girardi 2012): the report's claims.

Each claim in config/westwood.yaml (`reference.claims`) has an id that names one function here and
is judged on the cells' trimmed means (analysis/verdicts.py says what each verdict means).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from analysis.compare import cell_value
from analysis.verdicts import (
    Comparison,
    Measure,
    Verdict,
    above,
    below,
    difference,
    every_trial,
    judge,
    measure,
    missing,
    near,
    trial_values,
)
from figures.common import claims_of
from tcprepro.config import PaperConfig

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

    def m(self, cc: str, cond: str, metric: str) -> Measure | None:
        return measure(self.by_key.get((cc, cond)), metric)


def _v(m: Measure | None, digits: int = 0) -> str:
    return "-" if m is None else f"{m.value:.{digits}f}"


def _tol(claim: dict[str, Any]) -> float:
    return float(claim["bars"]["tolerance_pct"]["value"])


def _vs_report(cond: str, cc: str, m: Measure | None, ref: float | None, tol: float) -> Comparison:
    where = f"{cond}, {LABEL[cc]}"
    if ref is None:
        return missing(where, "the report gives no number")
    text = f"{LABEL[cc]} {_v(m)} kbit/s vs the report's {ref:.0f} (within {tol:g} %)"
    return near(where, text, m, ref, tol, "kbit/s")


def rel_gap(a: Measure | None, b: Measure | None) -> Measure | None:
    """a - b in % of their mean (its noise likewise)."""
    d = difference(a, b)
    if d is None or a is None or b is None:
        return None
    return d.scaled(100.0 / ((a.value + b.value) / 2))


def equal_at_test1(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """4.1: both reach about 9500 kbit/s: each within the bar of it, and of each other."""
    tol = _tol(claim)
    ms = {cc: cells.m(cc, "t1", GOODPUT) for cc in CCS}
    for cc in CCS:
        yield _vs_report("t1", cc, ms[cc], reference.get(f"{cc}-t1"), tol)
    gap = rel_gap(ms["cubic"], ms["westwood"])
    size = None if gap is None else Measure(abs(gap.value), gap.noise, gap.n)
    yield below("t1", f"CUBIC {_v(ms['cubic'])} vs Westwood+ {_v(ms['westwood'])} kbit/s, apart by "
                      f"{_v(size, 2)} % (within {tol:g} %)", size, tol, "%")


def _ahead(cells: Cells, claim: dict[str, Any], cond: str, ahead: str, reference: dict[str, float]) -> list[Comparison]:
    """The order of the two throughputs, and each against the report's number."""
    behind = next(c for c in CCS if c != ahead)
    a, b = cells.m(ahead, cond, GOODPUT), cells.m(behind, cond, GOODPUT)
    ref_a, ref_b = reference.get(f"{ahead}-{cond}"), reference.get(f"{behind}-{cond}")
    paper = f" (report: {ref_a:.0f} vs {ref_b:.0f})" if ref_a and ref_b else ""
    out = [above(f"{cond}, order", f"{LABEL[ahead]} {_v(a)} vs {LABEL[behind]} {_v(b)} kbit/s{paper}", a, b, "kbit/s")]
    return out + [_vs_report(cond, cc, m, ref, _tol(claim)) for cc, m, ref in ((ahead, a, ref_a), (behind, b, ref_b))]


def in_flight_note(cells: Cells, cond: str, ahead: str, reference: dict[str, float]) -> str:
    """On a path with delay, what both sets of numbers mean in bytes in flight per base round trip
    (throughput x RTT): where the report's are a small part of ours, its senders were held back by
    something the report does not describe."""
    behind = next(c for c in CCS if c != ahead)
    a, b = cells.m(ahead, cond, GOODPUT), cells.m(behind, cond, GOODPUT)
    ref_a, ref_b = reference.get(f"{ahead}-{cond}"), reference.get(f"{behind}-{cond}")
    rtt_s = 2 * float(cells.params.get((ahead, cond), {}).get("delay_ms", 0)) / 1000
    if a is None or b is None or not ref_a or not ref_b or rtt_s <= 0:
        return ""
    # kbit/s x s / 8 = KB in flight
    ours, theirs = [a.value * rtt_s / 8, b.value * rtt_s / 8], [ref_a * rtt_s / 8, ref_b * rtt_s / 8]
    note = (f"Over the {rtt_s * 1000:.0f}-ms base round trip, the report's numbers mean "
            f"{theirs[0]:.0f} KB ({LABEL[ahead]}) and {theirs[1]:.0f} KB ({LABEL[behind]}) in flight "
            f"on average, against {ours[0]:.0f} KB and {ours[1]:.0f} KB here.")
    if all(t < o / 2 for o, t in zip(ours, theirs, strict=True)):
        note += (" Something the report does not describe held its senders back: a window limit, "
                 "timeouts or a short test would; the report gives neither its test time nor its "
                 "socket buffer sizes.")
    return note


def cubic_ahead_test2(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    return _ahead(cells, claim, "t2", "cubic", reference)


def westwood_ahead_test3(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    return _ahead(cells, claim, "t3", "westwood", reference)


def westwood_oscillates_more(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """5: per test, cwnd's (max - min) / mean after the first congestion event, Westwood+ above CUBIC."""
    for cond in claim["where"]["tests"]:
        c, w = cells.m("cubic", cond, OSCILLATION), cells.m("westwood", cond, OSCILLATION)
        yield above(cond, f"cwnd (max - min) / mean: Westwood+ {_v(w, 2)} vs CUBIC {_v(c, 2)}", w, c)


def westwood_gain_needs_high_loss(cells: Cells, claim: dict[str, Any],
                                  reference: dict[str, float]) -> Iterable[Comparison]:
    """5: Westwood+'s only perceptible gain is with loss, and it took 5 % loss to see a considerable
    one: its lead over CUBIC at 5 % above its lead at each lower loss rate."""
    top = claim["where"]["at"]
    gap_top = rel_gap(cells.m("westwood", top, GOODPUT), cells.m("cubic", top, GOODPUT))
    for cond in claim["where"]["below"]:
        gap = rel_gap(cells.m("westwood", cond, GOODPUT), cells.m("cubic", cond, GOODPUT))
        loss = cells.params.get(("cubic", cond), {}).get("loss_pct", cond)
        yield above(f"{loss} % loss", f"Westwood+'s lead over CUBIC: {_v(gap_top, 1)} % at 5 % loss vs "
                                      f"{_v(gap, 1)} % here", gap_top, gap, "%")


def mismatch_no_congestion(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """A.1, Fig 11: with a shaper queue larger than the window the socket buffers allow, the queue
    never fills, so no packet is dropped (every trial), and cwnd grows past the bar. cwnd falls
    there are spurious timeouts (the queue lets the RTT grow by seconds faster than the RTO
    follows): reported, not a failure."""
    factor = float(claim["bars"]["growth_factor"]["value"])
    for cc in CCS:
        cell = cells.by_key.get((cc, "mismatch"))
        where = f"mismatch, {LABEL[cc]}"
        drops = trial_values(cell, "q_forward_drops")
        if not drops:
            yield missing(where, "no drop count measured")
        else:
            yield every_trial(where, f"no packet dropped at the shaper (drops per trial: "
                                     f"{', '.join(f'{v:.0f}' for v in drops.values())})",
                              [v == 0 for v in drops.values()])
        peak = cells.m(cc, "mismatch", "bulk0.cwnd_max")
        matched = cells.params.get((cc, "t1"), {}).get("queue_pkts", 50)
        falls, queue = cells.m(cc, "mismatch", EVENTS), cells.m(cc, "mismatch", "q_forward_backlog_pkts_max")
        yield above(where, f"cwnd peaked at {_v(peak)} packets (bar: {factor:g} x the {matched}-packet queue of "
                           f"Test 1); the queue grew to {_v(queue)} packets; cwnd fell by a fifth {_v(falls)} times "
                           "(spurious timeouts, no loss)", peak, factor * matched, "packets")


CLAIMS: dict[str, Callable[[Cells, dict[str, Any], dict[str, float]], Iterable[Comparison]]] = {
    "equal_at_test1": equal_at_test1,
    "cubic_ahead_test2": cubic_ahead_test2,
    "westwood_ahead_test3": westwood_ahead_test3,
    "westwood_oscillates_more": westwood_oscillates_more,
    "westwood_gain_needs_high_loss": westwood_gain_needs_high_loss,
    "mismatch_no_congestion": mismatch_no_congestion,
}


def reference_throughput(reference: dict[str, Any]) -> dict[str, float]:
    """{cell id: the report's kbit/s} from reference.tables.throughput."""
    return {cid: float(v[0]) for cid, v in reference["tables"]["throughput"]["values"].items()}


def judge_claims(claims: list[dict[str, Any]], cells: Cells, reference: dict[str, Any]) -> list[Verdict]:
    unknown = [c["id"] for c in claims if c["id"] not in CLAIMS]
    if unknown:
        raise ValueError(f"claims with no evaluator in analysis/westwood/claims.py: {', '.join(unknown)}")
    ref = reference_throughput(reference)
    notes = {"cubic_ahead_test2": ("t2", "cubic"), "westwood_ahead_test3": ("t3", "westwood")}
    return [judge(c, CLAIMS[c["id"]](cells, c, ref),
                  in_flight_note(cells, *notes[c["id"]], ref) if c["id"] in notes else "") for c in claims]


def evaluate(cells: dict[str, dict[str, Any]], cfg: PaperConfig, profile: str) -> list[Verdict]:
    """Every claim's verdict from cells by id (cell.json files, or a committed table read back)."""
    params = {cid: c.params for cid, c in cfg.cells_by_id.items()}
    reference = cfg.data["reference"]
    return judge_claims(claims_of(cfg, profile), Cells.from_cells(cells, params), reference)
