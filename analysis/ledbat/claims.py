"""The LEDBAT paper's claims, judged on the cells' metrics (analysis/ledbat/metrics.py) under the verdict
rule of analysis/verdicts.py.

Each claim in config/ledbat.yaml (`reference.claims`) has an id naming one function here. A claim
reads the cells of the conditions the paper states (`where`: the case of its figure, e.g. 100 MB at
base RTT 40 ms); a condition this profile did not run is a missing comparison, never replaced by a
case it did run. Thresholds are the claim's `bars`, each with its reason in the config.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from analysis.report.paper_run import claims_of
from analysis.verdicts import (
    Comparison,
    Measure,
    Verdict,
    above,
    below,
    difference,
    every_trial,
    inside,
    judge,
    measure,
    missing,
    near,
    per_trial,
    trial_values,
)
from cc.registry import target_ms
from configuration.load import PaperConfig

LINEAR, MIN1, NF2, NF1, MDVAR = "ledbat", "ledbat-min1", "ledbat-md-nf2", "ledbat-md-nf1", "ledbat-mdvar"
MD = (NF2, NF1, MDVAR)
# The decrease schemes as the paper names them beside one another, not the registry's labels
# ("LEDBAT", "LEDBAT MD-NF2", ... in config/congestion_controls.yaml), which name the algorithm too.
LABEL = {LINEAR: "linear", MIN1: "min. 1 pkt/RTT", NF2: "MD-NF2", NF1: "MD-NF1", MDVAR: "MDvar"}
# Section 5.1: "each flow starts with an offset of 15 s to the previous one" (config: stagger_s)
STAGGER_S = 15.0
# The newcomer's first seconds in which the queue's minimum is read (metrics.ARRIVAL_SETTLED_S)
FIRST_S = 5


@dataclass
class Cells:
    """Measured cells (at least one valid trial, ledbat metrics merged) by (cc, case)."""

    by_key: dict[tuple[str, str], dict[str, Any]]
    params: dict[str, dict[str, Any]]               # case -> its matrix parameters
    cell_params: dict[tuple[str, str], dict[str, Any]] | None = None    # (cc, case) -> the cell's parameters

    @classmethod
    def from_cells(cls, cells: dict[str, dict[str, Any]], params: dict[str, dict[str, Any]]) -> Cells:
        by_key, cases, per_cell = {}, {}, {}
        for cell_id, p in params.items():
            cases[p["case"]] = p
            per_cell[(p["cc"], p["case"])] = p
            cell = cells.get(cell_id)
            if cell and cell.get("n_valid", 0) > 0:
                by_key[(p["cc"], p["case"])] = cell
        return cls(by_key, cases, per_cell)

    def m(self, cc: str, case: str, metric: str) -> Measure | None:
        return measure(self.by_key.get((cc, case)), metric)

    def value(self, cc: str, case: str, metric: str) -> float | None:
        m = self.m(cc, case, metric)
        return None if m is None else m.value

    def first_case(self, ccs: tuple[str, ...], cases: list[str]) -> str | None:
        """The first of `cases` in which any of `ccs` was measured (what a figure draws)."""
        return next((c for c in cases if any((cc, c) in self.by_key for cc in ccs)), None)

    def sweep_cases(self, delay_ms: int, n: int) -> list[str]:
        """Fig 5's cases (10 Mbit/s, no cross traffic) at one base delay and number of flows; a
        case beyond the paper that repeats another (`twin_of`) is not one of them."""
        return sorted((c for c, p in self.params.items()
                       if "twin_of" not in p and int(p["delay_ms"]) == delay_ms and int(p["n"]) == n
                       and int(p.get("n_cross", 0)) == 0
                       and int(p["rate_kbit"]) == 10000 and int(p["queue_pkts"]) == 60),
                      key=lambda c: int(self.params[c]["bytes"]))

    def receiver_case(self, cc: str, case: str, quickack: bool) -> str | None:
        """The case that runs `cc` at `case`, or a twin repeating it, with the receiver's delayed
        ACKs off (quickack) or on: the same scenario under and without the receiver's noise."""
        for (c, k), p in (self.cell_params or {}).items():
            if c == cc and (k == case or p.get("twin_of") == case) and bool(p["quickack"]) == quickack:
                return k
        return None


def _v(m: Measure | None, digits: int = 3) -> str:
    return "-" if m is None else f"{m.value:.{digits}g}"


def _bar(claim: dict[str, Any], name: str) -> float:
    return float(claim["bars"][name]["value"])


def _case(claim: dict[str, Any]) -> str:
    return str(claim["where"]["case"])


def _sweep_case(delay_ms: int, n: int, size_mb: int) -> str:
    return f"rtt{2 * int(delay_ms)}-n{n}-{size_mb}mb"


def latecomer_advantage(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 1 (linear decrease): the late-comer predominates while both run and finishes first."""
    case = _case(claim)
    share = cells.m(LINEAR, case, "late_share")
    bar = _bar(claim, "late_share")
    yield above(case, f"the late-comer's share of the link while both run {_v(share)} (bar {bar:g})", share, bar)
    d1, d2 = cells.m(LINEAR, case, "bulk0.done_s"), cells.m(LINEAR, case, "bulk1.done_s")
    yield below(case, f"flow 2 done at {_v(d2, 4)} s, flow 1 at {_v(d1, 4)} s (paper: 106 and 171 s)", d2, d1, "s")


def _share(cells: Cells, claim: dict[str, Any], cc: str, case: str, fair: bool, where: str) -> Comparison:
    """The flows' share of the bandwidth over the time they run together (metrics: jain_share)
    against the claim's bar: equal at or above it, unequal below."""
    j, bar = cells.m(cc, case, "jain_share"), _bar(claim, "jain_min")
    text = f"{LABEL[cc]}: Jain's index of the bytes each flow moved while they ran together {_v(j)}"
    if fair:
        return above(where, f"{text} (equal share: at least {bar:g})", j, bar)
    return below(where, f"{text} (unequal: below {bar:g})", j, bar)


def md_share_equally(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 2 (40 ms): every MD variant gives the two flows an equal share of the bandwidth; MD-NF2,
    which does not synchronise, does not divide it as perfectly as MD-NF1 from second to second."""
    case = _case(claim)
    for cc in MD:
        yield _share(cells, claim, cc, case, True, f"{case}, {LABEL[cc]}")
    nf2, nf1 = cells.m(NF2, case, "jain_mean"), cells.m(NF1, case, "jain_mean")
    yield below(f"{case}, MD-NF2 vs MD-NF1", f"Jain's index per second: MD-NF2 {_v(nf2)} vs MD-NF1 {_v(nf1)} "
                                             "(MD-NF2 does not perfectly divide the bandwidth)", nf2, nf1)


def fixed_beta_unfair_rtt20(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 3 (20 ms) and 5.3: the fixed-beta MD variants do not give the flows an equal share (the
    headline), and less equal than MDvar's, which still does."""
    case = _case(claim)
    mdvar = cells.m(MDVAR, case, "jain_share")
    for cc in (NF2, NF1):
        yield _share(cells, claim, cc, case, False, f"{case}, {LABEL[cc]}")
        j = cells.m(cc, case, "jain_share")
        yield below(f"{case}, {LABEL[cc]} vs MDvar", f"share of the bandwidth, Jain's index: {LABEL[cc]} {_v(j)} vs "
                                                     f"MDvar {_v(mdvar)}", j, mdvar)
    yield _share(cells, claim, MDVAR, case, True, f"{case}, MDvar")


def _arrival(cells: Cells, claim: dict[str, Any], cc: str, case: str, k: int, fair: bool) -> Comparison:
    """The flows' share of the bandwidth over the last seconds before flow k+1 joins."""
    j, bar = cells.m(cc, case, f"arrival{k}_jain"), _bar(claim, "jain_min")
    where = f"{case}, {LABEL[cc]}, flow {k} joins"
    text = f"{LABEL[cc]}: Jain's index of the bytes before the next arrival {_v(j)}"
    if fair:
        return above(where, f"{text} (equal: at least {bar:g})", j, bar)
    return below(where, f"{text} (disturbed, no equilibrium: below {bar:g})", j, bar)


def md_five_flows(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 4, read arrival by arrival as the paper tells it: with MD-NF1 the first two flows share
    equally, every later flow disturbs the others before an equilibrium is reached (the headline);
    MDvar's flows share equally after a short time, always, i.e. before each next arrival."""
    case = _case(claim)
    n = int(cells.params.get(case, {}).get("n", 5))
    yield _arrival(cells, claim, NF1, case, 2, True)
    for k in range(3, n + 1):
        yield _arrival(cells, claim, NF1, case, k, False)
    for k in range(2, n + 1):
        yield _arrival(cells, claim, MDVAR, case, k, True)


def mdvar_every_scenario(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2: MDvar shares equally in all kinds of scenarios, independent of RTT and number of flows:
    every base delay of section 5.1 by every number of flows 2-5, at every size measured."""
    for delay in claim["where"]["delay_ms"]:
        for n in claim["where"]["flows"]:
            where = f"RTT {2 * int(delay)} ms, {n} flows"
            measured = [c for c in cells.sweep_cases(int(delay), int(n)) if (MDVAR, c) in cells.by_key]
            if not measured:
                yield missing(where, "MDvar not run")
            for case in measured:
                j, bar = cells.m(MDVAR, case, "jain_share"), _bar(claim, "jain_min")
                yield above(where, f"{case}: MDvar share of the bandwidth, Jain's index {_v(j)} (bar {bar:g})", j, bar)


def md_underutilises(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2 and 6: MD empties the queue periodically (the queue's 10th percentile while the first
    flow is alone below linear's) and uses the link less than linear decrease."""
    case = _case(claim)
    lin_u, lin_q = cells.m(LINEAR, case, "utilisation"), cells.m(LINEAR, case, "lone_queue_p10_ms")
    for cc in MD:
        u, q = cells.m(cc, case, "utilisation"), cells.m(cc, case, "lone_queue_p10_ms")
        where = f"{case}, {LABEL[cc]}"
        yield below(where, f"utilisation {_v(u)} vs linear {_v(lin_u)}", u, lin_u)
        yield below(where, f"queue's 10th percentile, first flow alone, {_v(q)} ms vs linear {_v(lin_q)}", q, lin_q,
                    "ms")


def linear_fills_link(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """6: linear decrease fully utilises the link in stable state: while the first flow runs alone
    (the second half of that phase) the queue never drains, its 10th percentile above zero."""
    case = _case(claim)
    q = cells.m(LINEAR, case, "lone_queue_p10_ms")
    yield above(case, f"linear: queue's 10th percentile, first flow alone, {_v(q)} ms (never empty: above 0)", q,
                0.0, "ms")


def sum_rate_linear_above_mdvar(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 5: linear decrease's mean sum rate above MDvar's, at every size and number of flows the
    claim's `where` lists."""
    w = claim["where"]
    for n in w["flows"]:
        for size in w["sizes_mb"]:
            case = _sweep_case(w["delay_ms"], n, size)
            lin, var = cells.m(LINEAR, case, "sum_rate_mbit_s"), cells.m(MDVAR, case, "sum_rate_mbit_s")
            yield above(f"{n} flows x {size} MB", f"mean sum rate: linear {_v(lin)} vs MDvar {_v(var)} Mbit/s",
                        lin, var, "Mbit/s")


def linear_rate_grows_with_size(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.3: with long transmissions the times a flow starts or ends, when the link is not fully
    used, weigh less: linear decrease's mean sum rate at the largest size above the smallest."""
    w = claim["where"]
    small, large = min(w["sizes_mb"]), max(w["sizes_mb"])
    for n in w["flows"]:
        lo = cells.m(LINEAR, _sweep_case(w["delay_ms"], n, small), "sum_rate_mbit_s")
        hi = cells.m(LINEAR, _sweep_case(w["delay_ms"], n, large), "sum_rate_mbit_s")
        yield above(f"{n} flows", f"linear mean sum rate: {large} MB {_v(hi)} vs {small} MB {_v(lo)} Mbit/s", hi, lo,
                    "Mbit/s")


def linear_does_not_yield(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 6 upper: standard linear LEDBAT keeps its share against the TCP flow (second half of the
    overlap): above the bar, and above the 1-packet minimum decrease of Fig 6 lower."""
    case = _case(claim)
    lin, min1, bar = cells.m(LINEAR, case, "ledbat_share_vs_tcp"), cells.m(MIN1, case, "ledbat_share_vs_tcp"), \
        _bar(claim, "yield_share")
    yield above(f"{case}, linear", f"LEDBAT's share against TCP {_v(lin)} (yielding: below {bar:g})", lin, bar)
    yield above(f"{case}, linear", f"LEDBAT's share against TCP: linear {_v(lin)} vs min. 1 pkt/RTT {_v(min1)}",
                lin, min1)


def min1_yields(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 6 lower: with a decrease of at least one packet per RTT LEDBAT yields to the TCP flow."""
    case = _case(claim)
    lin, min1, bar = cells.m(LINEAR, case, "ledbat_share_vs_tcp"), cells.m(MIN1, case, "ledbat_share_vs_tcp"), \
        _bar(claim, "yield_share")
    yield below(f"{case}, min. 1 pkt/RTT", f"LEDBAT's share against TCP {_v(min1)} (yielding: below {bar:g})", min1,
                bar)
    yield below(f"{case}, min. 1 pkt/RTT", f"LEDBAT's share against TCP: min. 1 pkt/RTT {_v(min1)} vs linear "
                                           f"{_v(lin)}", min1, lin)


def min1_slower_increase(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.4: with the minimum decrease the increase is slower than with standard linear decrease
    (it decreases from time to time on the delayed ACKs' noise): the LEDBAT flow's mean rate while
    alone, before the TCP flow starts, below linear's."""
    case = _case(claim)
    lin, min1 = cells.m(LINEAR, case, "lone_rate_mbit_s"), cells.m(MIN1, case, "lone_rate_mbit_s")
    yield below(f"{case}, min. 1 pkt/RTT", f"LEDBAT's mean rate alone, before TCP starts: min. 1 pkt/RTT {_v(min1)} "
                                           f"vs linear {_v(lin)} Mbit/s", min1, lin, "Mbit/s")


def loss_hits_tcp_only(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.4 (Fig 6 upper): when the TCP flow fills the queue and loss occurs, the loss hits only the
    TCP flow: in each trial the LEDBAT flow retransmitted nothing and the TCP flow did."""
    case = _case(claim)
    cell = cells.by_key.get((LINEAR, case))
    led, tcp = trial_values(cell, "bulk0.rexmt_data_pkts"), trial_values(cell, "bulk1.rexmt_data_pkts")
    flags = [led[t] == 0 and tcp[t] > 0 for t in sorted(set(led) & set(tcp))]
    yield every_trial(f"{case}, linear", "the LEDBAT flow retransmitted no packet and the TCP flow did", flags)


def _packets(m: Measure | None, per_ms: float) -> Measure | None:
    return None if m is None else m.scaled(per_ms)


def target_queue_42(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.4: a lone LEDBAT flow at 20 Mbit/s fills the queue to TARGET, 42 packets (1500 bytes) of
    the 60: its queue's median while alone, in packets, within the delay samples' resolution of
    TARGET either way."""

    case, res = _case(claim), _bar(claim, "resolution_ms")
    per_ms = float(cells.params[case]["rate_kbit"]) / (8 * 1500)          # packets per ms of queue
    target = float(target_ms(LINEAR) or 0)
    q = cells.m(LINEAR, case, "lone_queue_p50_ms")
    pkts = _packets(q, per_ms)
    yield inside(case, f"linear: the queue's median while LEDBAT is alone {_v(pkts)} packets, {_v(q)} ms "
                       f"(TARGET {target:g} ms: {target * per_ms:.1f} packets; the paper: "
                       f"{claim['where']['target_pkts']})", pkts, (target - res) * per_ms, (target + res) * per_ms,
                 "packets")


def lone_flow_at_target(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 1: the first flow increases its rate until the link is filled and TARGET's 25 ms of
    extra delay are introduced: its queue's median while alone within the delay samples'
    resolution of TARGET either way."""

    case, res = _case(claim), _bar(claim, "resolution_ms")
    target = float(target_ms(LINEAR) or 0)
    q = cells.m(LINEAR, case, "lone_queue_p50_ms")
    yield inside(case, f"linear: the queue's median while the first flow is alone {_v(q)} ms (TARGET {target:g} ms, "
                       f"within {res:g} ms)", q, target - res, target + res, "ms")


def latecomer_wrong_base(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2 (Fig 1): the late-comer never measures the correct base delay (the queue does not drain
    in its first seconds: it takes the first flow's queue for base delay) and adds its own delay on
    top of the first flow's (the queue while both run above the queue the first flow held alone)."""
    case, res = _case(claim), _bar(claim, "resolution_ms")
    cell = cells.by_key.get((LINEAR, case))
    q = cells.m(LINEAR, case, "arrival2_queue_min_ms")
    yield above(f"{case}, base delay", f"linear: the queue's minimum over the late-comer's first {FIRST_S} s "
                                       f"{_v(q)} ms (never empty: above {res:g} ms)", q, res, "ms")
    added = per_trial(cell, ["both_queue_p50_ms", "lone_queue_p50_ms"], lambda both, lone: both - lone)
    both, lone = cells.m(LINEAR, case, "both_queue_p50_ms"), cells.m(LINEAR, case, "lone_queue_p50_ms")
    yield above(f"{case}, added delay", f"linear: the queue's median while both run {_v(both)} ms, the first "
                                        f"flow's alone {_v(lone)} ms: added {_v(added)} ms (on top: above 0)",
                added, 0.0, "ms")


def md_newcomer_true_base(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2 (Fig 2): multiplicative decrease empties the queue when another flow starts, so the
    newcomer quickly measures the right base delay: the queue's minimum over its first seconds
    within the delay samples' resolution of empty."""
    case, res = _case(claim), _bar(claim, "resolution_ms")
    for cc in MD:
        q = cells.m(cc, case, "arrival2_queue_min_ms")
        yield below(f"{case}, {LABEL[cc]}", f"the queue's minimum over the newcomer's first {FIRST_S} s {_v(q)} ms "
                                            f"(empty as the sender can tell: below {res:g} ms)", q, res, "ms")


def _first_done(cells: Cells, cc: str, case: str) -> Measure | None:
    """The first completion of each trial of two flows, s since the first flow's start."""
    return per_trial(cells.by_key.get((cc, case)), ["bulk0.done_s", "bulk1.done_s"], min)


def completion_times(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2's numbers (100 MB, 40 ms): linear: flow 2 done at 106 s, within the bar of it; MD: flow
    1 done within the paper's own 134-158 s, and nearly the same transfer time as flow 2 (the paper
    calls 134-158 s nearly the same as 156 s). The last completion, 171 s, is not compared: the
    transfer size is derived from it (reference.choices)."""
    case, tol, same = _case(claim), _bar(claim, "tolerance_pct"), _bar(claim, "same_s")
    d = cells.m(LINEAR, case, "bulk1.done_s")
    yield near("linear, flow 2", f"done at {_v(d, 4)} s (paper 106 s, within {tol:g} %)", d, 106, tol, "s")
    for cc in MD:
        d1 = cells.m(cc, case, "bulk0.done_s")
        yield inside(f"{LABEL[cc]}, flow 1", f"done at {_v(d1, 4)} s (paper 134-158 s)", d1, 134, 158, "s")
        gap = per_trial(cells.by_key.get((cc, case)), ["bulk0.done_s", "bulk1.done_s"],
                        lambda a, b: abs(a - (b - STAGGER_S)))
        yield below(f"{LABEL[cc]}, both flows", f"transfer times differ by {_v(gap)} s (nearly the same: at most "
                                                f"{same:g} s)", gap, same, "s")


def linear_one_user_earlier(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2: under linear decrease at least one user gets a much better completion time; under MD all
    wait long: each trial's first completion, MD's at least the bar's factor later than linear's
    (the paper's own "much better": 106 s against 134 s at the least)."""
    case, much = _case(claim), _bar(claim, "much")
    lin = _first_done(cells, LINEAR, case)
    for cc in MD:
        md = _first_done(cells, cc, case)
        yield above(f"{case}, {LABEL[cc]}", f"first transfer done: {LABEL[cc]} {_v(md, 4)} s vs linear {_v(lin, 4)} s "
                                            f"(much later: at least {much:g} x)",
                    md, None if lin is None else lin.scaled(much), "s")


def _mean_transfer(cells: Cells, cc: str, case: str) -> Measure | None:
    """Each trial's mean transfer time over its two flows, each from its own start."""
    return per_trial(cells.by_key.get((cc, case)), ["bulk0.done_s", "bulk1.done_s"],
                     lambda a, b: (a + b - STAGGER_S) / 2)


def linear_lower_mean_completion(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Abstract, 1 and 6: block-wise transfers minimise the mean completion time; MD's come with
    increased completion times: the two flows' mean transfer time under linear decrease below each
    MD scheme's."""
    case = _case(claim)
    lin = _mean_transfer(cells, LINEAR, case)
    for cc in MD:
        md = _mean_transfer(cells, cc, case)
        yield below(f"{case}, {LABEL[cc]}", f"mean transfer time: linear {_v(lin, 4)} s vs {LABEL[cc]} {_v(md, 4)} s",
                    lin, md, "s")


def linear_privileges_last(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """6: linear decrease always privileges the flow which started last: in every trial of every
    Fig 5 case the last flow's transfer (from its own start) is the shortest, by the margin to the
    next shortest."""
    w = claim["where"]
    for n in w["flows"]:
        for size in w["sizes_mb"]:
            case = _sweep_case(w["delay_ms"], n, size)
            names = [f"bulk{k}.done_s" for k in range(n)]

            def lead(*done: float, n: int = n) -> float:
                took = [d - STAGGER_S * k for k, d in enumerate(done)]
                return min(took[:-1]) - took[-1]

            m = per_trial(cells.by_key.get((LINEAR, case)), names, lead)
            yield above(f"{n} flows x {size} MB", f"the last flow's transfer shorter than any other's by {_v(m)} s",
                        m, 0.0, "s")


def linear_share_on_restart(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2: linear flows that start at the same time, or restart after the currently dominating
    flow finished, share the capacity equally. No scenario starts two flows together (missing);
    the flows left when the first one completes after every flow has started share the bytes of
    that phase equally (metrics.restart_jain), in every Fig 5 case of three or more flows."""
    w, bar = claim["where"], _bar(claim, "jain_min")
    yield missing("two flows started together", "linear decrease, two flows started at the same time",
                  "no scenario starts two flows together (section 5.1 staggers every flow by 15 s)")
    for n in w["flows"]:
        for size in w["sizes_mb"]:
            case = _sweep_case(w["delay_ms"], n, size)
            j = cells.m(LINEAR, case, "restart_jain")
            yield above(f"{n} flows x {size} MB", f"linear: Jain's index of the bytes after the first completion "
                                                  f"{_v(j)} (equal share: at least {bar:g})", j, bar)


def md_noise_sensitive(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Abstract, 4 and 5.3: MD is much more sensitive to noise than linear decrease: the receiver's
    delayed ACKs (section 4's noise) cost each MD scheme at least the bar's factor more of the
    link than they cost linear decrease in the same scenario (utilisation with quick ACKs less
    with delayed ACKs, each scheme's paper cell and its twin)."""
    case, much = _case(claim), _bar(claim, "much")
    loss = {cc: _noise_cost(cells, cc, case) for cc in (LINEAR, *MD)}
    lin = loss[LINEAR]
    for cc in MD:
        where = f"{case}, {LABEL[cc]}"
        absent = [LABEL[c] for c in (LINEAR, cc) if loss[c] is None]
        text = f"utilisation lost to delayed ACKs: {LABEL[cc]} {_v(loss[cc])} vs linear {_v(lin)} " \
               f"(much more: at least {much:g} x)"
        if absent:
            yield missing(where, text, f"{' and '.join(absent)} not run both with and without delayed ACKs here")
            continue
        yield above(where, text, loss[cc], lin.scaled(much))          # type: ignore[union-attr]


def _noise_cost(cells: Cells, cc: str, case: str) -> Measure | None:
    quick, delayed = cells.receiver_case(cc, case, True), cells.receiver_case(cc, case, False)
    if quick is None or delayed is None:
        return None
    return difference(cells.m(cc, quick, "utilisation"), cells.m(cc, delayed, "utilisation"))


Evaluator = Callable[[Cells, dict[str, Any]], Iterable[Comparison]]
# Claims that read a scenario both with and without the receiver's delayed ACKs (its twin) by
# themselves: a twin standing in for the paper's cell does not judge them again.
READS_TWINS = frozenset({"md_noise_sensitive"})
CLAIMS: dict[str, Evaluator] = {
    "latecomer_advantage": latecomer_advantage,
    "latecomer_wrong_base": latecomer_wrong_base,
    "linear_privileges_last": linear_privileges_last,
    "linear_share_on_restart": linear_share_on_restart,
    "lone_flow_at_target": lone_flow_at_target,
    "md_share_equally": md_share_equally,
    "md_newcomer_true_base": md_newcomer_true_base,
    "fixed_beta_unfair_rtt20": fixed_beta_unfair_rtt20,
    "md_five_flows": md_five_flows,
    "mdvar_every_scenario": mdvar_every_scenario,
    "md_underutilises": md_underutilises,
    "md_noise_sensitive": md_noise_sensitive,
    "linear_fills_link": linear_fills_link,
    "linear_better_large": sum_rate_linear_above_mdvar,
    "linear_better_100mb": sum_rate_linear_above_mdvar,
    "linear_rate_grows_with_size": linear_rate_grows_with_size,
    "linear_does_not_yield": linear_does_not_yield,
    "loss_hits_tcp_only": loss_hits_tcp_only,
    "min1_yields": min1_yields,
    "min1_slower_increase": min1_slower_increase,
    "completion_times": completion_times,
    "linear_one_user_earlier": linear_one_user_earlier,
    "linear_lower_mean_completion": linear_lower_mean_completion,
    "target_queue_42": target_queue_42,
}


def judge_claims(claims: list[dict[str, Any]], cells: Cells) -> list[Verdict]:
    unknown = [c["id"] for c in claims if c["id"] not in CLAIMS]
    if unknown:
        raise ValueError(f"claims with no evaluator in analysis/ledbat/claims.py: {', '.join(unknown)}")
    return [judge(c, CLAIMS[c["id"]](cells, c)) for c in claims]


def evaluate(cells: dict[str, dict[str, Any]], cfg: PaperConfig, profile: str) -> list[Verdict]:
    """Every claim's verdict from cells by id (with analysis/ledbat/metrics.py's metrics merged in)."""
    params = {cid: c.params for cid, c in cfg.cells_by_id.items()}
    return judge_claims(claims_of(cfg, profile), Cells.from_cells(cells, params))
