"""802.11b fairness paper: its claims judged on the cells' trimmed means, and the curves its figures
plot (a metric against M_t for one scenario, scheduler variant and AP buffer).

Each claim in config/wlan.yaml (`reference.claims`) has an id naming one function here. A claim
is a set of comparisons, one line each with the numbers; analysis/verdicts.py turns held and
failed lines into reproduced / partly / not reproduced.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analysis.compare import cell_value
from analysis.diffing import Tolerance
from analysis.verdicts import Verdict, judge

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

    def value(self, scen: str, variant: str, q: int, mt: int, metric: str) -> float | None:
        return cell_value(self.by_key.get((scen, variant, q, mt)), metric, "mean")

    def mts(self, scen: str, variant: str, q: int) -> list[int]:
        return sorted(k[3] for k in self.by_key if k[:3] == (scen, variant, q))

    def qs(self, scen: str, variant: str) -> list[int]:
        return sorted({k[2] for k in self.by_key if k[:2] == (scen, variant)})

    def curve(self, scen: str, variant: str, q: int, metric: str) -> list[Point]:
        """The metric against M_t: trimmed mean, and the smallest and largest trial."""
        out = []
        for mt in self.mts(scen, variant, q):
            agg = self.by_key[(scen, variant, q, mt)].get("metrics", {}).get(metric)
            if agg and all(_finite(agg.get(k)) for k in ("mean", "min", "max")):
                out.append(Point(mt, float(agg["mean"]), float(agg["min"]), float(agg["max"])))
        return out


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _f(v: float | None, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}g}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.2f} %"


class Judge:
    """Collects a claim's comparisons: each one a line, held or failed, or missing if unmeasured."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.failed: list[str] = []
        self.missing: list[str] = []

    def check(self, ok: bool | None, line: str) -> None:
        if ok is None:
            self.missing.append(line)
        else:
            (self.held if ok else self.failed).append(line)

    def verdict(self, claim: dict[str, Any], note: str = "") -> Verdict:
        return judge(claim, self.held, self.failed, self.missing, note)


@dataclass
class Context:
    cells: Cells
    reference: dict[str, Any]
    profile: str

    @property
    def band(self) -> tuple[float, float]:
        low, high = self.reference["near_one"]
        return float(low), float(high)


def _paper_scenarios(ctx: Context, variant: str) -> list[str]:
    """dl2-ul2 and dl4-ul4: the scenarios the paper swept over Q (Figs 2, 4, 6, 8)."""
    return [s for s in ("dl2-ul2", "dl4-ul4") if ctx.cells.qs(s, variant)]


# ---------------------------------------------------------------- the claims

def dl1ul1_mt1_numbers(ctx: Context, claim: dict[str, Any]) -> Verdict:
    """The one set of numbers the text gives, within the table's tolerance, and the direction."""
    j = Judge()
    cell_id = claim["cell"]
    table = next((t for t in ctx.reference["tables"].values() if cell_id in t["values"]), None)
    if table is None:
        j.check(None, f"no reference table holds {cell_id}")
        return j.verdict(claim)
    cell = ctx.cells.cell(cell_id)
    for (col, spec), paper in zip(table["columns"].items(), table["values"][cell_id], strict=True):
        got = cell_value(cell, spec["metric"], spec["stat"])
        tol = Tolerance.from_config(spec.get("tolerance"), ctx.profile)
        if got is None or paper is None:
            j.check(None, f"{col}: not measured")
            continue
        off = 100 * (got - paper) / paper
        j.check(tol.allows(got, paper), f"{col}: {got:.1f} {spec.get('unit', '')} against the paper's {paper:g} "
                                        f"({off:+.0f} %, tolerance {tol})")
    down, up = cell_value(cell, DOWN, "mean"), cell_value(cell, UP, "mean")
    if down is not None and up is not None:
        j.check(down > up, f"direction: downlink {down:.0f} against uplink {up:.0f} pkt/s (paper: downlink ahead)")
    return j.verdict(claim)


def dl1ul1_reverses_above_3(ctx: Context, claim: dict[str, Any]) -> Verdict:
    """A reversal needs both sides: without a point at M_t <= 3 and one above, it is not evaluated."""
    j = Judge()
    scen = claim["scenario"]
    pts = ctx.cells.curve(scen, "fifo", 100, RATIO)
    sides = {p.mt <= 3 for p in pts}
    for p in pts:
        want_down = p.mt <= 3
        j.check((p.mean > 1 if want_down else p.mean < 1) if len(sides) == 2 else None,
                f"M_t = {p.mt}: ratio {p.mean:.2f} (paper: {'downlink' if want_down else 'uplink'} ahead)")
    if len(sides) < 2:
        j.check(None, f"{scen}, FIFO, Q = 100: no point at M_t {'> 3' if True in sides else '<= 3'}")
    return j.verdict(claim)


def small_buffers_favour_uplink(ctx: Context, claim: dict[str, Any]) -> Verdict:
    """Smallest Q against largest: lower ratio, higher downlink DATA loss, at each M_t."""
    j = Judge()
    for scen in _paper_scenarios(ctx, "fifo"):
        qs = ctx.cells.qs(scen, "fifo")
        small, large = qs[0], qs[-1]
        if small > int(claim["small_q_max"]) or small == large:
            j.check(None, f"{scen}: no AP buffer of at most {claim['small_q_max']} packets beside a large one")
            continue
        for mt in ctx.cells.mts(scen, "fifo", small):
            r_s, r_l = (ctx.cells.value(scen, "fifo", q, mt, RATIO) for q in (small, large))
            l_s, l_l = (ctx.cells.value(scen, "fifo", q, mt, DOWN_LOSS) for q in (small, large))
            if r_s is not None and r_l is not None:
                j.check(r_s < r_l, f"{scen}, M_t = {mt}: ratio {r_s:.3g} at Q = {small} "
                                   f"against {r_l:.3g} at Q = {large}")
            if l_s is not None and l_l is not None:
                j.check(l_s > l_l, f"{scen}, M_t = {mt}: downlink DATA loss {_pct(l_s)} at Q = {small} "
                                   f"against {_pct(l_l)} at Q = {large}")
    return j.verdict(claim)


def large_buffers_ease_downlink(ctx: Context, claim: dict[str, Any]) -> Verdict:
    j = Judge()
    for scen in _paper_scenarios(ctx, "fifo"):
        qs = ctx.cells.qs(scen, "fifo")
        if len(qs) < 2:
            continue
        for mt in ctx.cells.mts(scen, "fifo", qs[-1]):
            d_s, d_l = (ctx.cells.value(scen, "fifo", q, mt, DOWN) for q in (qs[0], qs[-1]))
            if d_s is not None and d_l is not None:
                j.check(d_l > d_s, f"{scen}, M_t = {mt}: downlink {d_l:.1f} pkt/s at Q = {qs[-1]} "
                                   f"against {d_s:.1f} at Q = {qs[0]}")
    return j.verdict(claim)


def many_attempts_favour_uplink(ctx: Context, claim: dict[str, Any]) -> Verdict:
    """At the largest M_t the ratio is below 1 and below its value at M_t = 1, every scenario and Q."""
    j = Judge()
    for scen in ("dl1-ul1", *_paper_scenarios(ctx, "fifo")):
        for q in ctx.cells.qs(scen, "fifo"):
            pts = ctx.cells.curve(scen, "fifo", q, RATIO)
            if len(pts) < 2 or pts[0].mt != 1:
                continue
            first, last = pts[0], pts[-1]
            j.check(last.mean < 1 and last.mean < first.mean,
                    f"{scen}, Q = {q}: ratio {first.mean:.3g} at M_t = 1, {last.mean:.3g} at M_t = {last.mt}")
    return j.verdict(claim)


def overall_goodput_grows_with_mt(ctx: Context, claim: dict[str, Any]) -> Verdict:
    j = Judge()
    for scen in ("dl1-ul1", "dl2-ul2", "dl4-ul4"):
        pts = ctx.cells.curve(scen, "fifo", 100, TOTAL)
        if len(pts) >= 2 and pts[0].mt == 1:
            j.check(pts[-1].mean > pts[0].mean, f"{scen}, Q = 100: {pts[0].mean:.0f} pkt/s at M_t = 1, "
                                                f"{pts[-1].mean:.0f} at M_t = {pts[-1].mt}")
    return j.verdict(claim)


def more_flows_worse(ctx: Context, claim: dict[str, Any]) -> Verdict:
    """Where the uplink leads (M_t >= 4), the ratio moves further from 1 from dl1-ul1 to dl4-ul4."""
    j = Judge()
    scens = ("dl1-ul1", "dl2-ul2", "dl4-ul4")
    for mt in ctx.cells.mts("dl1-ul1", "fifo", 100):
        if mt < 4:
            continue
        vals = [ctx.cells.value(s, "fifo", 100, mt, RATIO) for s in scens]
        if any(v is None or v <= 0 for v in vals):
            continue
        dist = [abs(math.log(v)) for v in vals if v]
        j.check(dist[0] < dist[1] < dist[2], f"M_t = {mt}, Q = 100: ratio " +
                ", ".join(f"{s} {v:.3g}" for s, v in zip(scens, vals, strict=True)))
    return j.verdict(claim)


def uplink_loss_higher_at_mt1(ctx: Context, claim: dict[str, Any]) -> Verdict:
    j = Judge()
    for q in ctx.cells.qs("dl4-ul4", "fifo"):
        up, down = (ctx.cells.value("dl4-ul4", "fifo", q, 1, m) for m in (UP_LOSS, DOWN_LOSS))
        if up is not None and down is not None:
            j.check(up > down, f"Q = {q}: uplink {_pct(up)}, downlink {_pct(down)}")
    return j.verdict(claim)


def uplink_loss_falls_with_mt(ctx: Context, claim: dict[str, Any]) -> Verdict:
    """Non-increasing along M_t, allowing `slack` (absolute) for steps near zero."""
    j = Judge()
    slack = float(claim.get("slack", 0.0))
    for q in ctx.cells.qs("dl4-ul4", "fifo"):
        pts = ctx.cells.curve("dl4-ul4", "fifo", q, UP_LOSS)
        if len(pts) < 2:
            continue
        rises = [(a, b) for a, b in itertools.pairwise(pts) if b.mean > a.mean + slack]
        series = " -> ".join(f"{_pct(p.mean)} (M_t {p.mt})" for p in pts)
        j.check(not rises, f"Q = {q}: {series}" + (f"; rises at M_t {', '.join(f'{a.mt}->{b.mt}' for a, b in rises)}"
                                                    if rises else ""))
    return j.verdict(claim, f"A step counts as a rise when it exceeds {slack:g} (absolute)." if slack else "")


def downlink_loss_dips_at_mt2(ctx: Context, claim: dict[str, Any]) -> Verdict:
    j = Judge()
    for q in ctx.cells.qs("dl4-ul4", "fifo"):
        pts = {p.mt: p.mean for p in ctx.cells.curve("dl4-ul4", "fifo", q, DOWN_LOSS)}
        if not {1, 2} <= set(pts) or max(pts) <= 2:
            continue
        top = max(pts)
        j.check(pts[2] < pts[1] and pts[top] > pts[2],
                f"Q = {q}: {_pct(pts[1])} at M_t = 1, {_pct(pts[2])} at 2, {_pct(pts[top])} at {top}")
    return j.verdict(claim)


def scheduler_balances(ctx: Context, claim: dict[str, Any]) -> Verdict:
    j = Judge()
    low, high = ctx.band
    for scen in ("dl1-ul1", "dl2-ul2", "dl4-ul4"):
        for q in ctx.cells.qs(scen, "dataack"):
            if q < int(claim["q_min"]):
                continue
            for p in ctx.cells.curve(scen, "dataack", q, RATIO):
                if p.mt > int(claim["mt_above"]):
                    j.check(low <= p.mean <= high, f"{scen}, Q = {q}, M_t = {p.mt}: ratio {p.mean:.2f} "
                                                   f"(about 1:1 = {low:g} to {high:g})")
    return j.verdict(claim)


def scheduler_cuts_downlink_loss(ctx: Context, claim: dict[str, Any]) -> Verdict:
    j = Judge()
    for q in ctx.cells.qs("dl4-ul4", "dataack"):
        for mt in ctx.cells.mts("dl4-ul4", "dataack", q):
            if mt < int(claim["mt_min"]):
                continue
            s, f = (ctx.cells.value("dl4-ul4", v, q, mt, DOWN_LOSS) for v in ("dataack", "fifo"))
            if s is not None and f is not None:
                j.check(s < f, f"dl4-ul4, Q = {q}, M_t = {mt}: downlink DATA loss {_pct(s)} with the scheduler, "
                               f"{_pct(f)} with FIFO")
    return j.verdict(claim)


def scheduler_keeps_uplink_loss(ctx: Context, claim: dict[str, Any]) -> Verdict:
    j = Judge()
    tol = float(claim["abs_tolerance"])
    for q in ctx.cells.qs("dl4-ul4", "dataack"):
        for mt in ctx.cells.mts("dl4-ul4", "dataack", q):
            s, f = (ctx.cells.value("dl4-ul4", v, q, mt, UP_LOSS) for v in ("dataack", "fifo"))
            if s is not None and f is not None:
                j.check(abs(s - f) <= tol, f"dl4-ul4, Q = {q}, M_t = {mt}: uplink DATA loss {_pct(s)} with the "
                                           f"scheduler, {_pct(f)} with FIFO (within {_pct(tol)})")
    return j.verdict(claim)


def adaptive_tracks_flow_ratio(ctx: Context, claim: dict[str, Any]) -> Verdict:
    """Beyond the paper: within the 1:1 band scaled to N_down/N_up, and closer to it than both the
    fixed scheduler and FIFO."""
    j = Judge()
    low, high = ctx.band
    spec = ctx.reference["beyond"]["adaptive"]
    for scen in spec["scenarios"]:
        n_down, n_up = ctx.cells.flows.get(scen, (0, 0))
        if not n_up:
            continue
        target = n_down / n_up
        for mt in ctx.cells.mts(scen, "adaptive", spec["q"]):
            if mt <= int(claim["mt_above"]):
                continue
            vals = {v: ctx.cells.value(scen, v, spec["q"], mt, RATIO) for v in spec["variants"]}
            a = vals.get("adaptive")
            if a is None or a <= 0:
                continue
            others = {v: x for v, x in vals.items() if v != "adaptive" and x and x > 0}
            closer = all(abs(math.log(a / target)) < abs(math.log(x / target)) for x in others.values())
            j.check(low * target <= a <= high * target and closer,
                    f"{scen}, M_t = {mt}: target {target:g}; adaptive {a:.3g}, "
                    + ", ".join(f"{v} {x:.3g}" for v, x in others.items()))
    return j.verdict(claim)


EVALUATORS: dict[str, Callable[[Context, dict[str, Any]], Verdict]] = {
    f.__name__: f for f in (dl1ul1_mt1_numbers, dl1ul1_reverses_above_3, small_buffers_favour_uplink,
                            large_buffers_ease_downlink, many_attempts_favour_uplink, overall_goodput_grows_with_mt,
                            more_flows_worse, uplink_loss_higher_at_mt1, uplink_loss_falls_with_mt,
                            downlink_loss_dips_at_mt2, scheduler_balances, scheduler_cuts_downlink_loss,
                            scheduler_keeps_uplink_loss, adaptive_tracks_flow_ratio)}


def evaluate(cells: Cells, reference: dict[str, Any], profile: str) -> list[Verdict]:
    ctx = Context(cells, reference, profile)
    return [EVALUATORS[c["id"]](ctx, c) for c in reference["claims"]]
