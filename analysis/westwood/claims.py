"""Westwood+ vs CUBIC (Gerhard, Girardi 2012): the report's claims.

Each claim in config/westwood.yaml (`reference.claims`) has an id that names one function here and
is judged on the cells' trimmed means (analysis/verdicts.py says what each verdict means).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from analysis.paper_tables import cell_value
from analysis.report.paper_run import cc_label, claims_of
from analysis.verdicts import (
    Comparison,
    Measure,
    Verdict,
    above,
    below,
    every_trial,
    inside,
    judge,
    measure,
    missing,
    near,
    trial_values,
)
from configuration.load import PaperConfig

CCS = ("cubic", "westwood")
GOODPUT = "goodput_kbit_s"
OSCILLATION = "bulk0.cwnd_range_rel"
# The report's oscillation, "the difference between the highest and the lowest value in a single
# experiment": cwnd's max - min (packets) over the flow's whole tcp_probe series (analysis/westwood/run.py).
CWND_RANGE = "bulk0.cwnd_range_pkts"
EVENTS = "bulk0.congestion_events"
REXMT = "rexmt_data_pkts"
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

    def param(self, cond: str, name: str) -> Any:
        """A setting of the condition (the same for both algorithms), None when not in the config."""
        return (self.params.get(("cubic", cond)) or self.params.get(("westwood", cond)) or {}).get(name)

    def share(self, cond: str) -> Measure | None:
        """Westwood+'s throughput over CUBIC's at the condition."""
        return ratio(self.m("westwood", cond, GOODPUT), self.m("cubic", cond, GOODPUT))


def _v(m: Measure | None, digits: int = 0) -> str:
    return "-" if m is None else f"{m.value:.{digits}f}"


def _bar(claim: dict[str, Any], name: str) -> float:
    return float(claim["bars"][name]["value"])


def _tol(claim: dict[str, Any]) -> float:
    return _bar(claim, "tolerance_pct")


def _vs_report(cond: str, cc: str, m: Measure | None, ref: float | None, tol: float) -> Comparison:
    where = f"{cond}, {cc_label(cc)}"
    if ref is None:
        return missing(where, "the report gives no number")
    text = f"{cc_label(cc)} {_v(m)} kbit/s vs the report's {ref:.0f} (within {tol:g} %)"
    return near(where, text, m, ref, tol, "kbit/s")


def _numbers(cells: Cells, claim: dict[str, Any], cond: str, reference: dict[str, float]) -> list[Comparison]:
    """Each algorithm's throughput at the condition against the report's number."""
    return [_vs_report(cond, cc, cells.m(cc, cond, GOODPUT), reference.get(f"{cc}-{cond}"), _tol(claim))
            for cc in CCS]


def ratio(a: Measure | None, b: Measure | None) -> Measure | None:
    """a / b for measures of different cells. Trials of different cells are never paired, so its
    noise is what either cell's own range alone moves the ratio by, the larger of the two:
    max(range of a, ratio x range of b) / b."""
    if a is None or b is None or b.value == 0:
        return None
    r = a.value / b.value
    noise = None if a.noise is None or b.noise is None else max(a.noise, abs(r) * b.noise) / abs(b.value)
    return Measure(r, noise, min(a.n, b.n))


def _share_text(cells: Cells, cond: str) -> str:
    r = cells.share(cond)
    return (f"Westwood+ / CUBIC {_v(r, 3)} (Westwood+ {_v(cells.m('westwood', cond, GOODPUT))} vs "
            f"CUBIC {_v(cells.m('cubic', cond, GOODPUT))} kbit/s)")


def equal_at_test1(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """4.1: "in both cases ... about 9500 Kbits/s": each algorithm within the bar of it."""
    return _numbers(cells, claim, "t1", reference)


def cubic_ahead_test2(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """4.2: Westwood+'s throughput "about the half" of CUBIC's (a band around 0.5 reaching the
    report's own ratio), and both numbers against the report's."""
    center, width = _bar(claim, "about_half"), _bar(claim, "half_width")
    lo, hi = center - width, center + width
    w, c = reference.get("westwood-t2"), reference.get("cubic-t2")
    theirs = f"; the report's {w:.0f} / {c:.0f} = {w / c:.3f}" if w and c else ""
    yield inside("t2, about the half", f"{_share_text(cells, 't2')}{theirs}; about the half: {lo:.3f} to {hi:.3f}",
                 cells.share("t2"), lo, hi)
    yield from _numbers(cells, claim, "t2", reference)


def westwood_ahead_test3(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """4.3: Westwood+ "slightly better" than CUBIC: ahead (ratio above 1), by no more than the
    report's two numbers allow within their bars (slight_max_ratio); both numbers against the report's."""
    top = _bar(claim, "slight_max_ratio")
    w, c = reference.get("westwood-t3"), reference.get("cubic-t3")
    theirs = f" (the report's {w:.0f} / {c:.0f} = {w / c:.3f})" if w and c else ""
    r = cells.share("t3")
    yield above("t3, Westwood+ better", f"{_share_text(cells, 't3')} above 1{theirs}", r, 1.0)
    yield below("t3, slightly", f"{_share_text(cells, 't3')} below {top:.3f}, the most 'slightly' allows", r, top)
    yield from _numbers(cells, claim, "t3", reference)


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
            f"{theirs[0]:.0f} KB ({cc_label(ahead)}) and {theirs[1]:.0f} KB ({cc_label(behind)}) in flight "
            f"on average, against {ours[0]:.0f} KB and {ours[1]:.0f} KB here.")
    if all(t < o / 2 for o, t in zip(ours, theirs, strict=True)):
        note += (" Something the report does not describe held its senders back: a window limit, "
                 "timeouts or a short test would; the report gives neither its test time nor its "
                 "socket buffer sizes.")
    return note


def westwood_oscillates_more(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """5: per test, cwnd's highest minus lowest value in the experiment (packets), Westwood+ above CUBIC."""
    for cond in claim["where"]["tests"]:
        c, w = cells.m("cubic", cond, CWND_RANGE), cells.m("westwood", cond, CWND_RANGE)
        yield above(cond, f"cwnd highest - lowest in an experiment: Westwood+ {_v(w)} vs CUBIC {_v(c)} packets",
                    w, c, "packets")


def _condition(cells: Cells, cond: str) -> str:
    """'5 % loss', '0 % loss, 500 ms': a condition as its loss rate (and one-way delay, if any)."""
    loss, delay = cells.param(cond, "loss_pct"), cells.param(cond, "delay_ms")
    if loss is None:
        return cond
    return f"{float(loss):g} % loss" + (f", {float(delay):g} ms" if delay else "")


def westwood_gain_needs_high_loss(cells: Cells, claim: dict[str, Any],
                                  reference: dict[str, float]) -> Iterable[Comparison]:
    """5: the only perceptible improvement of Westwood+ over CUBIC is with loss, and it took 5 %
    to see a considerable one: Westwood+ / CUBIC above 1 + perceptible_pct at 5 %, at most that at
    the report's other tests and the loss rates below 5 %."""
    pct = _bar(claim, "perceptible_pct")
    limit = 1 + pct / 100
    top = claim["where"]["at"]
    yield above(_condition(cells, top), f"{_share_text(cells, top)}: a lead above {pct:g} %",
                cells.share(top), limit)
    for cond in claim["where"]["others"]:
        yield below(_condition(cells, cond), f"{_share_text(cells, cond)}: no lead above {pct:g} %",
                    cells.share(cond), limit)


def westwood_degrades_above_rtt_125ms(cells: Cells, claim: dict[str, Any],
                                      reference: dict[str, float]) -> Iterable[Comparison]:
    """5: an RTT above the report's 125 ms affects Westwood+'s bandwidth estimate: below it
    Westwood+ keeps within level_pct of CUBIC, above it falls behind by more. RTT: twice the
    one-way delay (reference.choices)."""
    threshold, pct = float(claim["where"]["rtt_ms"]), _bar(claim, "level_pct")
    lo, hi = 1 - pct / 100, 1 + pct / 100
    for cond in claim["where"]["conditions"]:
        delay = cells.param(cond, "delay_ms")
        if delay is None:
            yield missing(cond, "Westwood+ / CUBIC", "the condition is not in the config")
            continue
        rtt = 2 * float(delay)
        if rtt <= threshold:
            yield inside(cond, f"delay {rtt:g} ms per round trip, not above {threshold:g}: "
                               f"{_share_text(cells, cond)} within {pct:g} % of 1", cells.share(cond), lo, hi)
        else:
            yield below(cond, f"delay {rtt:g} ms per round trip, above {threshold:g}: {_share_text(cells, cond)} "
                              f"below {lo:g}",
                        cells.share(cond), lo)


def cubic_better_with_huge_delays(cells: Cells, claim: dict[str, Any],
                                  reference: dict[str, float]) -> Iterable[Comparison]:
    """5: CUBIC, "not dependant to the RTT", more performant (throughput) and stable (its throughput
    depends less on the delay: it keeps more of its 0-ms throughput, Test 1's, than Westwood+ keeps
    of its own) than Westwood+ at every delay above the 125-ms RTT, up to Test 2's. With the two
    level at 0 ms the second tracks the first; it differs by their Test 1 gap."""
    base = claim["where"]["base"]
    for cond in claim["where"]["delays"]:
        c, w = cells.m("cubic", cond, GOODPUT), cells.m("westwood", cond, GOODPUT)
        yield above(f"{cond}, throughput", f"CUBIC {_v(c)} vs Westwood+ {_v(w)} kbit/s", c, w, "kbit/s")
        kept = {cc: ratio(cells.m(cc, cond, GOODPUT), cells.m(cc, base, GOODPUT)) for cc in CCS}
        yield above(f"{cond}, stable", f"throughput kept from {base}: CUBIC {_v(kept['cubic'], 3)} vs Westwood+ "
                                       f"{_v(kept['westwood'], 3)}", kept["cubic"], kept["westwood"])


def _counts(values: dict[int, float]) -> str:
    return ", ".join(f"{v:.0f}" for _, v in sorted(values.items())) or "-"


def mismatch_no_congestion(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """A.1, Fig 11: with a shaper queue larger than the window the socket buffers allow, the sender
    sees no congestion episode (no cwnd reduction, no retransmission, in every trial: a spurious
    timeout would be one) while cwnd grows past the most a matched path's slow start reaches
    (growth_factor x (Test 1's queue + the one packet on the wire)). No drop at the shaper is a given
    with this queue: listed, not judged."""
    factor = _bar(claim, "growth_factor")
    matched = int(cells.param("t1", "queue_pkts") or 50)
    for cc in CCS:
        cell = cells.by_key.get((cc, "mismatch"))
        where = f"mismatch, {cc_label(cc)}"
        events, rexmt = trial_values(cell, EVENTS), trial_values(cell, REXMT)
        common = sorted(set(events) & set(rexmt))
        if not common:
            yield missing(f"{where}: no congestion episode", "no cwnd reduction or retransmission count measured")
        else:
            drops = _counts(trial_values(cell, "q_forward_drops"))
            yield every_trial(f"{where}: no congestion episode",
                              f"no cwnd reduction and no retransmitted packet (per trial: reductions "
                              f"{_counts({t: events[t] for t in common})}; retransmitted "
                              f"{_counts({t: rexmt[t] for t in common})}; drops at the shaper, a given with "
                              f"this queue: {drops})",
                              [events[t] == 0 and rexmt[t] == 0 for t in common])
        peak, queue = cells.m(cc, "mismatch", "bulk0.cwnd_max"), cells.m(cc, "mismatch", "q_forward_backlog_pkts_max")
        yield above(f"{where}: cwnd grows", f"cwnd peaked at {_v(peak)} packets (bar: {factor:g} x ({matched} + 1), "
                                            f"the most a matched path's slow start reaches); the queue grew to "
                                            f"{_v(queue)} packets", peak, factor * (matched + 1), "packets")


def mismatch_throughput(cells: Cells, claim: dict[str, Any], reference: dict[str, float]) -> Iterable[Comparison]:
    """A.1: with the mismatch "the troughput was about 160kbit/s": each algorithm against it."""
    return _numbers(cells, claim, "mismatch", reference)


CLAIMS: dict[str, Callable[[Cells, dict[str, Any], dict[str, float]], Iterable[Comparison]]] = {
    "equal_at_test1": equal_at_test1,
    "cubic_ahead_test2": cubic_ahead_test2,
    "westwood_ahead_test3": westwood_ahead_test3,
    "westwood_oscillates_more": westwood_oscillates_more,
    "westwood_gain_needs_high_loss": westwood_gain_needs_high_loss,
    "westwood_degrades_above_rtt_125ms": westwood_degrades_above_rtt_125ms,
    "cubic_better_with_huge_delays": cubic_better_with_huge_delays,
    "mismatch_no_congestion": mismatch_no_congestion,
    "mismatch_throughput": mismatch_throughput,
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
