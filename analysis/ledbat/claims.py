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

from analysis.verdicts import (
    Comparison,
    Measure,
    Verdict,
    above,
    below,
    inside,
    judge,
    measure,
    missing,
    near,
    per_trial,
)
from figures.common import claims_of
from tcprepro.config import PaperConfig

LINEAR, MIN1, NF2, NF1, MDVAR = "ledbat", "ledbat-min1", "ledbat-md-nf2", "ledbat-md-nf1", "ledbat-mdvar"
MD = (NF2, NF1, MDVAR)
LABEL = {LINEAR: "linear", MIN1: "min. 1 pkt/RTT", NF2: "MD-NF2", NF1: "MD-NF1", MDVAR: "MDvar"}


@dataclass
class Cells:
    """Measured cells (at least one valid trial, ledbat metrics merged) by (cc, case)."""

    by_key: dict[tuple[str, str], dict[str, Any]]
    params: dict[str, dict[str, Any]]               # case -> its matrix parameters

    @classmethod
    def from_cells(cls, cells: dict[str, dict[str, Any]], params: dict[str, dict[str, Any]]) -> Cells:
        by_key, cases = {}, {}
        for cell_id, p in params.items():
            cases[p["case"]] = p
            cell = cells.get(cell_id)
            if cell and cell.get("n_valid", 0) > 0:
                by_key[(p["cc"], p["case"])] = cell
        return cls(by_key, cases)

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


def _v(m: Measure | None, digits: int = 3) -> str:
    return "-" if m is None else f"{m.value:.{digits}g}"


def _bar(claim: dict[str, Any], name: str) -> float:
    return float(claim["bars"][name]["value"])


def _case(claim: dict[str, Any]) -> str:
    return str(claim["where"]["case"])


def latecomer_advantage(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 1 (linear decrease): the late-comer predominates while both run and finishes first."""
    case = _case(claim)
    share = cells.m(LINEAR, case, "late_share")
    bar = _bar(claim, "late_share")
    yield above(case, f"the late-comer's share of the link while both run {_v(share)} (bar {bar:g})", share, bar)
    d1, d2 = cells.m(LINEAR, case, "bulk0.done_s"), cells.m(LINEAR, case, "bulk1.done_s")
    yield below(case, f"flow 2 done at {_v(d2, 4)} s, flow 1 at {_v(d1, 4)} s (paper: 106 and 171 s)", d2, d1, "s")


def _jain(cells: Cells, claim: dict[str, Any], cc: str, case: str, fair: bool, where: str) -> Comparison:
    j, bar = cells.m(cc, case, "jain_mean"), _bar(claim, "jain_min")
    if fair:
        return above(where, f"{LABEL[cc]} Jain's index {_v(j)} (equal share: at least {bar:g})", j, bar)
    return below(where, f"{LABEL[cc]} Jain's index {_v(j)} (unequal: below {bar:g})", j, bar)


def md_share_equally(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 2 (40 ms): every MD variant shares the link about equally between the two flows."""
    case = _case(claim)
    for cc in MD:
        yield _jain(cells, claim, cc, case, True, f"{case}, {LABEL[cc]}")


def fixed_beta_unfair_rtt20(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 3 (20 ms) and 5.3: the fixed-beta MD variants no longer share equally; MDvar still does,
    so each fixed-beta variant is less fair than MDvar."""
    case = _case(claim)
    mdvar = cells.m(MDVAR, case, "jain_mean")
    for cc in (NF2, NF1):
        where = f"{case}, {LABEL[cc]}"
        yield _jain(cells, claim, cc, case, False, where)
        j = cells.m(cc, case, "jain_mean")
        yield below(where, f"{LABEL[cc]} Jain's index {_v(j)} vs MDvar {_v(mdvar)}", j, mdvar)
    yield _jain(cells, claim, MDVAR, case, True, f"{case}, MDvar")


def md_five_flows(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Fig 4 (five flows, 40 ms): MD-NF1's later flows disturb the others before an equilibrium is
    reached (no equal share); MDvar's flows always share equally after a short time."""
    case = _case(claim)
    yield _jain(cells, claim, NF1, case, False, f"{case}, MD-NF1")
    yield _jain(cells, claim, MDVAR, case, True, f"{case}, MDvar")


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
                j, bar = cells.m(MDVAR, case, "jain_mean"), _bar(claim, "jain_min")
                yield above(where, f"{case}: MDvar Jain's index {_v(j)} (bar {bar:g})", j, bar)


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
            case = f"rtt{2 * int(w['delay_ms'])}-n{n}-{size}mb"
            lin, var = cells.m(LINEAR, case, "sum_rate_mbit_s"), cells.m(MDVAR, case, "sum_rate_mbit_s")
            yield above(f"{n} flows x {size} MB", f"mean sum rate: linear {_v(lin)} vs MDvar {_v(var)} Mbit/s",
                        lin, var, "Mbit/s")


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


def completion_times(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2's numbers (100 MB, 40 ms): last flow done at 171 s under every scheme; linear: flow 2
    done first, at 106 s; MD: flow 1 done at 134-158 s; each within the bar of the paper's value."""
    case, tol = _case(claim), _bar(claim, "tolerance_pct")
    for cc in (LINEAR, *MD):
        last = cells.m(cc, case, "last_done_s")
        yield near(f"{LABEL[cc]}, last flow", f"done at {_v(last, 4)} s (paper 171 s, within {tol:g} %)", last, 171,
                   tol, "s")
        if cc == LINEAR:
            d = cells.m(cc, case, "bulk1.done_s")
            yield near("linear, flow 2", f"done at {_v(d, 4)} s (paper 106 s, within {tol:g} %)", d, 106, tol, "s")
        else:
            d = cells.m(cc, case, "bulk0.done_s")
            yield inside(f"{LABEL[cc]}, flow 1", f"done at {_v(d, 4)} s (paper 134-158 s, within {tol:g} %)", d,
                         134 * (1 - tol / 100), 158 * (1 + tol / 100), "s")


def linear_one_user_earlier(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.2: under linear decrease at least one user completes much earlier; under MD all wait long:
    the first completion of each trial, linear against each MD variant."""
    case = _case(claim)

    def first(cc: str) -> Measure | None:
        return per_trial(cells.by_key.get((cc, case)), ["bulk0.done_s", "bulk1.done_s"], min)

    lin = first(LINEAR)
    for cc in MD:
        md = first(cc)
        yield below(f"{case}, {LABEL[cc]}", f"first transfer done: linear {_v(lin, 4)} s vs {LABEL[cc]} {_v(md, 4)} s",
                    lin, md, "s")


Evaluator = Callable[[Cells, dict[str, Any]], Iterable[Comparison]]
def target_queue_42(cells: Cells, claim: dict[str, Any]) -> Iterable[Comparison]:
    """5.4: a lone LEDBAT flow at 20 Mbit/s fills the queue to TARGET, 42 packets (1500 bytes) of
    the 60: its queue's median while alone, in packets, within the delay samples' resolution of
    TARGET either way."""
    from cc.registry import target_ms

    case, res = _case(claim), _bar(claim, "resolution_ms")
    per_ms = float(cells.params[case]["rate_kbit"]) / (8 * 1500)          # packets per ms of queue
    target = float(target_ms(LINEAR) or 0)
    q = cells.m(LINEAR, case, "lone_queue_p50_ms")
    pkts = None if q is None else Measure(q.value * per_ms, None if q.noise is None else q.noise * per_ms, q.n)
    yield inside(case, f"linear: the queue's median while LEDBAT is alone {_v(pkts)} packets, {_v(q)} ms "
                       f"(TARGET {target:g} ms: {target * per_ms:.1f} packets; the paper: "
                       f"{claim['where']['target_pkts']})", pkts, (target - res) * per_ms, (target + res) * per_ms,
                 "packets")


CLAIMS: dict[str, Evaluator] = {
    "latecomer_advantage": latecomer_advantage,
    "md_share_equally": md_share_equally,
    "fixed_beta_unfair_rtt20": fixed_beta_unfair_rtt20,
    "md_five_flows": md_five_flows,
    "mdvar_every_scenario": mdvar_every_scenario,
    "md_underutilises": md_underutilises,
    "linear_fills_link": linear_fills_link,
    "linear_better_large": sum_rate_linear_above_mdvar,
    "linear_better_100mb": sum_rate_linear_above_mdvar,
    "linear_does_not_yield": linear_does_not_yield,
    "min1_yields": min1_yields,
    "completion_times": completion_times,
    "linear_one_user_earlier": linear_one_user_earlier,
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
