"""802.11b fairness paper: its claims judged under the verdict rule of analysis/verdicts.py, and the
curves its figures plot (a metric against M_t for one scenario, scheduler variant and AP buffer).

Each claim in config/wlan.yaml (`reference.claims`) has an id naming one function here. A claim is
judged at the conditions the paper states (scenarios, AP buffers Q, M_t ranges: its `where`),
read from the configured matrix, so that a condition the profile did not run is a missing
comparison rather than a silent gap.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from analysis.numbers import finite
from analysis.verdicts import (
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
    near,
    per_trial,
)
from figures.common import claims_of
from tcprepro.config import PaperConfig

RATIO = "ratio_down_up"
DOWN, UP, TOTAL = "down_goodput_pkts_s", "up_goodput_pkts_s", "total_goodput_pkts_s"
DOWN_LOSS, UP_LOSS = "down_loss_prob", "up_loss_prob"

Key = tuple[str, str, int, int]        # (scenario, variant, Q, M_t)


@dataclass(frozen=True)
class Point:
    mt: int
    mean: float
    low: float                          # the smallest trial
    high: float                         # the largest trial


@dataclass
class Cells:
    """Measured cells (at least one valid trial) by (scenario, variant, Q, M_t)."""

    by_key: dict[Key, dict[str, Any]]
    flows: dict[str, tuple[int, int]]   # scenario -> (N_down, N_up)
    keys: dict[str, Key]                # every cell id of the config -> its key

    @property
    def planned(self) -> set[Key]:
        """Every cell of the configured matrix, run or not."""
        return set(self.keys.values())

    def grid(self, scen: str, variant: str, q: int | None = None) -> list[Key]:
        """The matrix's cells of one scenario and variant (and Q), in (Q, M_t) order."""
        return sorted(k for k in self.planned if k[:2] == (scen, variant) and (q is None or k[2] == q))

    def grid_qs(self, scen: str, variant: str) -> list[int]:
        return sorted({k[2] for k in self.grid(scen, variant)})

    def grid_mts(self, scen: str, variant: str, q: int) -> list[int]:
        return sorted(k[3] for k in self.grid(scen, variant, q))

    def m(self, scen: str, variant: str, q: int, mt: int, metric: str) -> Measure | None:
        return measure(self.by_key.get((scen, variant, q, mt)), metric)

    @classmethod
    def from_cells(cls, cells: dict[str, dict[str, Any]], params: dict[str, dict[str, Any]]) -> Cells:
        by_key, flows, keys = {}, {}, {}
        for cell_id, p in params.items():
            flows[p["scen"]] = (int(p["down"]), int(p["up"]))
            keys[cell_id] = (p["scen"], p["variant"], int(p["q"]), int(p["mt"]))
            cell = cells.get(cell_id)
            if cell and cell.get("n_valid", 0) > 0:
                by_key[keys[cell_id]] = cell
        return cls(by_key, flows, keys)

    def cell(self, cell_id: str) -> dict[str, Any] | None:
        key = self.keys.get(cell_id)
        return self.by_key.get(key) if key else None

    def mts(self, scen: str, variant: str, q: int) -> list[int]:
        return sorted(k[3] for k in self.by_key if k[:3] == (scen, variant, q))

    def qs(self, scen: str, variant: str) -> list[int]:
        return sorted({k[2] for k in self.by_key if k[:2] == (scen, variant)})

    def curve(self, scen: str, variant: str, q: int, metric: str) -> list[Point]:
        """The metric against M_t: trimmed mean, and the smallest and largest trial."""
        out = []
        for mt in self.mts(scen, variant, q):
            agg = self.by_key[(scen, variant, q, mt)].get("metrics", {}).get(metric)
            if agg and all(finite(agg.get(k)) for k in ("mean", "min", "max")):
                out.append(Point(mt, float(agg["mean"]), float(agg["min"]), float(agg["max"])))
        return out


def _f(m: Measure | None, digits: int = 3) -> str:
    return "-" if m is None else f"{m.value:.{digits}g}"


# Frames the MAC dropped after their last attempt, on either side: none means no retry limit acted.
RETRY_DROPS = ("mac_ap_retry_drops_data", "mac_ap_retry_drops_ack", "mac_sta_retry_drops_data",
               "mac_sta_retry_drops_ack")


def retry_drops(cell: dict) -> int | None:
    """Frames that used up their attempts, over every trial of a cell (None: not recorded)."""
    metrics = cell.get("metrics", {})
    if not all(k in metrics for k in RETRY_DROPS):
        return None
    return int(sum(sum(metrics[k]["values"]) for k in RETRY_DROPS))


def fixed(m: Measure | None, digits: int = 2) -> str:
    """A measure with `digits` decimals, '-' when it was not measured (the investigations' tables)."""
    return "-" if m is None else f"{m.value:.{digits}f}"


def _pct(m: Measure | None) -> str:
    return "-" if m is None else f"{100 * m.value:.2f} %"


@dataclass
class Context:
    cells: Cells
    reference: dict[str, Any]
    profile: str

    @property
    def band(self) -> tuple[float, float]:
        low, high = self.reference["near_one"]
        return float(low), float(high)


def _bar(claim: dict[str, Any], name: str) -> float:
    return float(claim["bars"][name]["value"])


def _at(scen: str, q: int, mt: int | None = None) -> str:
    return f"{scen}, Q = {q}" + (f", M_t = {mt}" if mt is not None else "")


def _scens(claim: dict[str, Any]) -> list[str]:
    return list(claim["where"]["scenarios"])


# ---------------------------------------------------------------- the claims

def dl1ul1_mt1_numbers(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 3: the one set of numbers the text gives, each within the bar of the paper's
    value, and the direction (downlink ahead)."""
    c = ctx.cells.cell(claim["where"]["cell"])
    tol = _bar(claim, "tolerance_pct")
    for what, metric, paper in (("overall", TOTAL, 370), ("downlink", DOWN, 250), ("uplink", UP, 120)):
        m = measure(c, metric)
        yield near(f"dl1-ul1, M_t = 1, {what}", f"{_f(m, 4)} pkt/s vs the paper's {paper} (within {tol:g} %)", m,
                   paper, tol, "pkt/s")
    down, up = measure(c, DOWN), measure(c, UP)
    yield above("dl1-ul1, M_t = 1, direction", f"downlink {_f(down, 4)} vs uplink {_f(up, 4)} pkt/s", down, up,
                "pkt/s")


def dl1ul1_reverses_above_3(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: dl1-ul1 (FIFO, Q = 100): downlink ahead for M_t <= 3, uplink ahead for M_t > 3."""
    q, turn = int(claim["where"]["q"]), int(claim["where"]["reverses_above"])
    for mt in ctx.cells.grid_mts("dl1-ul1", "fifo", q):
        r = ctx.cells.m("dl1-ul1", "fifo", q, mt, RATIO)
        if mt <= turn:
            yield above(_at("dl1-ul1", q, mt), f"ratio {_f(r)} (paper: downlink ahead, above 1)", r, 1.0)
        else:
            yield below(_at("dl1-ul1", q, mt), f"ratio {_f(r)} (paper: uplink ahead, below 1)", r, 1.0)


def mt1_ratio(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 2 at M_t = 1: dl2-ul2 about 1:1 with Q of 50-200, uplink favoured with smaller Q;
    dl4-ul4 downlink ahead."""
    low, high = ctx.band
    w = claim["where"]
    for q in ctx.cells.grid_qs("dl2-ul2", "fifo"):
        r = ctx.cells.m("dl2-ul2", "fifo", q, 1, RATIO)
        if q >= int(w["large_q_min"]):
            yield inside(_at("dl2-ul2", q, 1), f"ratio {_f(r)} (about 1:1: {low:g} to {high:g})", r, low, high)
        else:
            yield below(_at("dl2-ul2", q, 1), f"ratio {_f(r)} (uplink favoured: below 1)", r, 1.0)
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        r = ctx.cells.m("dl4-ul4", "fifo", q, 1, RATIO)
        yield above(_at("dl4-ul4", q, 1), f"ratio {_f(r)} (downlink ahead: above 1)", r, 1.0)


def mt2_downlink_gains(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 2: with M_t = 2 the downlink gains against M_t = 1, the more the larger the AP buffer."""
    for scen in _scens(claim):
        qs = ctx.cells.grid_qs(scen, "fifo")
        for q in qs:
            r1, r2 = (ctx.cells.m(scen, "fifo", q, mt, RATIO) for mt in (1, 2))
            yield above(_at(scen, q, 2), f"ratio {_f(r2)} at M_t = 2 vs {_f(r1)} at M_t = 1", r2, r1)
        for a, b in itertools.pairwise(qs):
            ra, rb = (ctx.cells.m(scen, "fifo", q, 2, RATIO) for q in (a, b))
            yield above(f"{scen}, M_t = 2, Q = {a} -> {b}", f"ratio {_f(rb)} at Q = {b} vs {_f(ra)} at Q = {a}", rb, ra)


def small_buffers_favour_uplink(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: small AP buffers (Q <= small_q_max) favour the uplink by raising the downlink DATA
    loss: against the largest Q, a lower ratio and a higher downlink loss at each M_t."""
    for scen in _scens(claim):
        qs = ctx.cells.grid_qs(scen, "fifo")
        large = qs[-1]
        for small in (q for q in qs if q <= int(claim["where"]["small_q_max"])):
            for mt in ctx.cells.grid_mts(scen, "fifo", small):
                r_s, r_l = (ctx.cells.m(scen, "fifo", q, mt, RATIO) for q in (small, large))
                l_s, l_l = (ctx.cells.m(scen, "fifo", q, mt, DOWN_LOSS) for q in (small, large))
                where = f"{scen}, M_t = {mt}, Q = {small} vs {large}"
                yield below(where, f"ratio {_f(r_s)} vs {_f(r_l)}", r_s, r_l)
                yield above(where, f"downlink DATA loss {_pct(l_s)} vs {_pct(l_l)}", l_s, l_l)


def large_buffers_ease_downlink(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: large AP buffers alleviate the throttling of the downlink: downlink goodput at the
    largest Q above that at the smallest, at each M_t."""
    for scen in _scens(claim):
        qs = ctx.cells.grid_qs(scen, "fifo")
        for mt in ctx.cells.grid_mts(scen, "fifo", qs[-1]):
            d_s, d_l = (ctx.cells.m(scen, "fifo", q, mt, DOWN) for q in (qs[0], qs[-1]))
            yield above(f"{scen}, M_t = {mt}, Q = {qs[-1]} vs {qs[0]}", f"downlink {_f(d_l, 4)} vs {_f(d_s, 4)} pkt/s",
                        d_l, d_s, "pkt/s")


def many_attempts_favour_uplink(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: by increasing M_t the uplink seizes the bandwidth and the downlink starves: at the
    largest M_t the ratio is below 1, and below its value at M_t = 1."""
    for scen in _scens(claim):
        for q in ctx.cells.grid_qs(scen, "fifo"):
            mts = ctx.cells.grid_mts(scen, "fifo", q)
            first, last = (ctx.cells.m(scen, "fifo", q, mt, RATIO) for mt in (mts[0], mts[-1]))
            yield below(_at(scen, q, mts[-1]), f"ratio {_f(last)} (uplink ahead: below 1)", last, 1.0)
            yield below(_at(scen, q, mts[-1]), f"ratio {_f(last)} vs {_f(first)} at M_t = {mts[0]}", last, first)


def overall_goodput_grows_with_mt(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 3: more transmission attempts raise the overall goodput: each M_t above M_t = 1."""
    q = int(claim["where"]["q"])
    for scen in _scens(claim):
        mts = ctx.cells.grid_mts(scen, "fifo", q)
        base = ctx.cells.m(scen, "fifo", q, mts[0], TOTAL)
        for mt in mts[1:]:
            t = ctx.cells.m(scen, "fifo", q, mt, TOTAL)
            yield above(_at(scen, q, mt), f"{_f(t, 4)} pkt/s vs {_f(base, 4)} at M_t = {mts[0]}", t, base, "pkt/s")


def _log_distance(cell: dict[str, Any] | None) -> Measure | None:
    """|log(ratio)| per trial: how far from 1:1, either way."""
    return per_trial(cell, [RATIO], lambda r: abs(math.log(r)) if r > 0 else None)


def more_flows_worse(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: more TCP flows worsen the unbalance: where the uplink leads (M_t above the reversal),
    the ratio moves further from 1:1 from dl1-ul1 to dl2-ul2 to dl4-ul4 (|log ratio|)."""
    q, scens = int(claim["where"]["q"]), _scens(claim)
    for mt in ctx.cells.grid_mts(scens[0], "fifo", q):
        if mt <= int(claim["where"]["reverses_above"]):
            continue
        d = {s: _log_distance(ctx.cells.by_key.get((s, "fifo", q, mt))) for s in scens}
        for a, b in itertools.pairwise(scens):
            yield above(f"Q = {q}, M_t = {mt}, {a} -> {b}", f"|log ratio| {_f(d[b])} ({b}) vs {_f(d[a])} ({a})",
                        d[b], d[a])


def ratio_below_saturation_share(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: with TCP the downlink/uplink ratio falls below the 1:(n+1) of saturated 802.11 (n
    stations), at the largest M_t."""
    for scen in _scens(claim):
        n = sum(ctx.cells.flows.get(scen, (0, 0)))
        for q in ctx.cells.grid_qs(scen, "fifo"):
            mt = ctx.cells.grid_mts(scen, "fifo", q)[-1]
            r = ctx.cells.m(scen, "fifo", q, mt, RATIO)
            share = 1 / (n + 1)
            yield below(_at(scen, q, mt), f"ratio {_f(r)} vs 1/(n+1) = {share:.3g} ({n} stations)", r, share)


def uplink_loss_higher_at_mt1(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 4: dl4-ul4 at M_t = 1, the uplink's DATA loss above the downlink's, every Q."""
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        up, down = (ctx.cells.m("dl4-ul4", "fifo", q, 1, m) for m in (UP_LOSS, DOWN_LOSS))
        yield above(_at("dl4-ul4", q, 1), f"uplink {_pct(up)} vs downlink {_pct(down)}", up, down)


def _steps(ctx: Context, metric: str, q: int, mts: list[int], rising: bool, what: str) -> Iterable[Comparison]:
    for a, b in itertools.pairwise(mts):
        la, lb = (ctx.cells.m("dl4-ul4", "fifo", q, mt, metric) for mt in (a, b))
        text = f"{what} {_pct(lb)} at M_t = {b} vs {_pct(la)} at {a}"
        yield (above if rising else below)(f"dl4-ul4, Q = {q}, M_t {a} -> {b}", text, lb, la)


def uplink_loss_falls_with_mt(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 4a: dl4-ul4, the uplink DATA loss decreases monotonically with M_t: every step down."""
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        yield from _steps(ctx, UP_LOSS, q, ctx.cells.grid_mts("dl4-ul4", "fifo", q), False, "uplink DATA loss")


def downlink_loss_dips_at_mt2(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 4b: dl4-ul4, the downlink DATA loss decreases until M_t = 2, then increases:
    the step 1 -> 2 down, every step after it up."""
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        mts = ctx.cells.grid_mts("dl4-ul4", "fifo", q)
        yield from _steps(ctx, DOWN_LOSS, q, [m for m in mts if m <= 2], False, "downlink DATA loss")
        yield from _steps(ctx, DOWN_LOSS, q, [m for m in mts if m >= 2], True, "downlink DATA loss")


def scheduler_no_help_where_downlink_leads(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV: where the downlink leads under FIFO, the scheduler does not make the two fairer: the
    downlink still leads (ratio above 1) with it. Conditions: the cells where FIFO's ratio is above
    1 beyond its noise."""
    found = False
    for scen in _scens(claim):
        for q in ctx.cells.grid_qs(scen, "fifo"):
            for mt in ctx.cells.grid_mts(scen, "fifo", q):
                f = ctx.cells.m(scen, "fifo", q, mt, RATIO)
                if f is None or f.noise is None or f.value - 1 <= f.noise:
                    continue
                found = True
                s = ctx.cells.m(scen, "dataack", q, mt, RATIO)
                yield above(_at(scen, q, mt), f"ratio with the scheduler {_f(s)} (FIFO {_f(f)}; downlink still "
                                              "ahead: above 1)", s, 1.0)
    if not found:
        yield missing(", ".join(_scens(claim)), "no cell where the downlink leads under FIFO beyond its noise")


def scheduler_balances(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV, Figs 6-7: with the DATA/ACK scheduler the goodput ratio is about 1:1 for M_t > 5 when
    Q >= 50 (Fig 6: dl2-ul2, dl4-ul4; Fig 7: dl1-ul1 too, at Q = 100)."""
    low, high = ctx.band
    w = claim["where"]
    keys = {k for s in w["scenarios"] for k in ctx.cells.grid(s, "dataack") if k[2] >= int(w["q_min"])}
    keys |= {k for s in w["fig7_scenarios"] for k in ctx.cells.grid(s, "dataack", int(w["fig7_q"]))}
    for scen, _, q, mt in sorted(keys):
        if mt > int(w["mt_above"]):
            r = ctx.cells.m(scen, "dataack", q, mt, RATIO)
            yield inside(_at(scen, q, mt), f"ratio {_f(r)} (about 1:1: {low:g} to {high:g})", r, low, high)


def scheduler_cuts_downlink_loss(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV, Fig 8b against 4b: dl4-ul4, the scheduler reduces the downlink DATA loss, every Q and M_t."""
    for q in ctx.cells.grid_qs("dl4-ul4", "dataack"):
        for mt in ctx.cells.grid_mts("dl4-ul4", "dataack", q):
            s, f = (ctx.cells.m("dl4-ul4", v, q, mt, DOWN_LOSS) for v in ("dataack", "fifo"))
            yield below(_at("dl4-ul4", q, mt), f"downlink DATA loss {_pct(s)} with the scheduler vs {_pct(f)} with "
                                               "FIFO", s, f)


def scheduler_keeps_uplink_loss(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV, Fig 8a against 4a: dl4-ul4, the uplink DATA loss does not change with the scheduler:
    the difference within the bar either way, every Q and M_t."""
    tol = _bar(claim, "abs_tolerance")
    for q in ctx.cells.grid_qs("dl4-ul4", "dataack"):
        for mt in ctx.cells.grid_mts("dl4-ul4", "dataack", q):
            s, f = (ctx.cells.m("dl4-ul4", v, q, mt, UP_LOSS) for v in ("dataack", "fifo"))
            d = difference(s, f)
            yield inside(_at("dl4-ul4", q, mt), f"uplink DATA loss {_pct(s)} with the scheduler vs {_pct(f)} with FIFO "
                                                f"(within {100 * tol:g} points)", d, -tol, tol)


def _off_target(cell: dict[str, Any] | None, target: float) -> Measure | None:
    """|log(ratio / target)| per trial: how far from the target ratio, either way."""
    return per_trial(cell, [RATIO], lambda r: abs(math.log(r / target)) if r > 0 else None)


def adaptive_tracks_flow_ratio(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Beyond the paper: weights 2 N_down : N_up hold the ratio inside the 1:1 band scaled to
    N_down/N_up, and closer to that target (|log ratio / target|) than FIFO and the fixed scheduler."""
    low, high = ctx.band
    spec = ctx.reference["beyond"]["adaptive"]
    q = int(spec["q"])
    for scen in spec["scenarios"]:
        n_down, n_up = ctx.cells.flows.get(scen, (0, 0))
        if not n_up:
            continue
        target = n_down / n_up
        for mt in ctx.cells.grid_mts(scen, "adaptive", q):
            if mt <= int(claim["where"]["mt_above"]):
                continue
            where = f"{scen}, M_t = {mt}"
            a = ctx.cells.m(scen, "adaptive", q, mt, RATIO)
            yield inside(where, f"adaptive ratio {_f(a)} (target {target:g}: {low * target:.3g} to "
                                f"{high * target:.3g})", a, low * target, high * target)

            off = {v: _off_target(ctx.cells.by_key.get((scen, v, q, mt)), target) for v in spec["variants"]}
            for other in (v for v in spec["variants"] if v != "adaptive"):
                yield below(where, f"|log(ratio / target)|: adaptive {_f(off['adaptive'])} vs {other} "
                                   f"{_f(off[other])}", off["adaptive"], off[other])


EVALUATORS: dict[str, Callable[[Context, dict[str, Any]], Iterable[Comparison]]] = {
    f.__name__: f for f in (dl1ul1_mt1_numbers, dl1ul1_reverses_above_3, mt1_ratio, mt2_downlink_gains,
                            small_buffers_favour_uplink, large_buffers_ease_downlink, many_attempts_favour_uplink,
                            overall_goodput_grows_with_mt, more_flows_worse, ratio_below_saturation_share,
                            uplink_loss_higher_at_mt1, uplink_loss_falls_with_mt, downlink_loss_dips_at_mt2,
                            scheduler_no_help_where_downlink_leads, scheduler_balances, scheduler_cuts_downlink_loss,
                            scheduler_keeps_uplink_loss, adaptive_tracks_flow_ratio)}


def judge_claims(cells: Cells, reference: dict[str, Any], profile: str) -> list[Verdict]:
    ctx = Context(cells, reference, profile)
    unknown = [c["id"] for c in reference["claims"] if c["id"] not in EVALUATORS]
    if unknown:
        raise ValueError(f"claims with no evaluator in analysis/wlan/claims.py: {', '.join(unknown)}")
    return [judge(c, EVALUATORS[c["id"]](ctx, c)) for c in reference["claims"]]


def evaluate(cells: dict[str, dict[str, Any]], cfg: PaperConfig, profile: str) -> list[Verdict]:
    """Every claim's verdict from cells by id (cell.json files, or a committed table read back)."""
    params = {cid: c.params for cid, c in cfg.cells_by_id.items()}
    reference = {**cfg.data["reference"], "claims": claims_of(cfg, profile)}
    return judge_claims(Cells.from_cells(cells, params), reference, profile)
