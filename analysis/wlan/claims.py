"""802.11b fairness paper: its claims judged under the verdict rule of analysis/verdicts.py, and the
curves its figures plot (a metric against M_t for one scenario, scheduler variant and AP buffer).

Each claim in config/wlan.yaml (`reference.claims`) has an id naming one function here. A claim is
judged at the conditions the paper states (scenarios, AP buffers Q, M_t ranges: its `where`),
read from the configured matrix, so that a condition the profile did not run is a missing
comparison rather than a silent gap. Every comparison names the runs it reads (`runs_key`): cells
that repeat another to the last digit (a retry limit no frame reached) count once.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from analysis.numbers import finite
from analysis.report.paper_run import claims_of
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
    per_trial,
    runs_key,
)
from configuration.load import PaperConfig

RATIO = "ratio_down_up"
DOWN, UP, TOTAL = "down_goodput_pkts_s", "up_goodput_pkts_s", "total_goodput_pkts_s"
DOWN_LOSS, UP_LOSS = "down_loss_prob", "up_loss_prob"
# Where DATA was lost (analysis/wlan/metrics.py): the stations' and the AP's retry-limit drops
# (collisions), the AP buffer's overflow.
UP_LOSS_MAC, DOWN_LOSS_MAC, DOWN_LOSS_AP_QUEUE = "up_loss_mac", "down_loss_mac", "down_loss_ap_queue"

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

    def at(self, scen: str, variant: str, q: int, mt: int) -> dict[str, Any] | None:
        """The cell.json of one condition, None when it was not run."""
        return self.by_key.get((scen, variant, q, mt))

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


def _bar(claim: dict[str, Any], name: str) -> float:
    return float(claim["bars"][name]["value"])


def about_one(claim: dict[str, Any]) -> tuple[float, float]:
    """The claim's "about 1:1" band, [1/k, k] for its bar `about_one` = k (config/wlan.yaml says
    why: nearer 1:1 than any other ratio the paper writes)."""
    k = _bar(claim, "about_one")
    return 1 / k, k


def paper_band(claim: dict[str, Any], paper: float) -> tuple[float, float]:
    """A goodput the paper prints to the tens, "about" it: the values that round to it (bar
    `rounding_pkts_s`)."""
    half = _bar(claim, "rounding_pkts_s")
    return paper - half, paper + half


def _once(c: Comparison, kind: str, *cells: dict[str, Any] | None) -> Comparison:
    """The comparison with the identity of the runs it reads: identical runs count once (judge)."""
    c.runs = runs_key(kind, *cells)
    return c


def _at(scen: str, q: int, mt: int | None = None) -> str:
    return f"{scen}, Q = {q}" + (f", M_t = {mt}" if mt is not None else "")


def _scens(claim: dict[str, Any]) -> list[str]:
    return list(claim["where"]["scenarios"])


def _log_ratio(cell: dict[str, Any] | None) -> Measure | None:
    """log(ratio) per trial: a ratio and its inverse equally far from 1:1."""
    return per_trial(cell, [RATIO], lambda r: math.log(r) if r > 0 else None)


def _log_distance(cell: dict[str, Any] | None) -> Measure | None:
    """|log(ratio)| per trial: how far from 1:1, either way."""
    return per_trial(cell, [RATIO], lambda r: abs(math.log(r)) if r > 0 else None)


def _magnitude(m: Measure | None) -> Measure | None:
    """|m|, with m's noise: how far apart two cells are, whichever is larger."""
    return None if m is None else Measure(abs(m.value), m.noise, m.n)


def _beside(a: Measure | None, b: Measure | None) -> Measure | None:
    """a carrying the larger noise of a and b: a judged against a bound made of b."""
    d = difference(a, b)
    return None if a is None or d is None else Measure(a.value, d.noise, d.n)


# ---------------------------------------------------------------- Section III: FIFO

def dl1ul1_numbers(cells: Cells, variant: str, claim: dict[str, Any], reference: dict[str, Any]) -> list[Comparison]:
    """The paper's dl1-ul1 numbers at M_t = 1, Q = 100 (total, down, up), each about the paper's
    (its printed precision), and the downlink ahead; for one setting (the claim's: FIFO)."""
    paper = reference["tables"]["dl1ul1_mt1"]["values"][claim["where"]["cell"]]
    c = cells.at("dl1-ul1", variant, 100, 1)
    out = []
    for what, metric, value in (("overall", TOTAL, paper[0]), ("downlink", DOWN, paper[1]), ("uplink", UP, paper[2])):
        m = measure(c, metric)
        low, high = paper_band(claim, value)
        out.append(inside(f"dl1-ul1, M_t = 1, {what}", f"{_f(m, 4)} pkt/s vs the paper's about {value:g} ({low:g} "
                                                       f"to {high:g})", m, low, high, "pkt/s"))
    down, up = measure(c, DOWN), measure(c, UP)
    out.append(above("dl1-ul1, M_t = 1, direction", f"downlink {_f(down, 4)} vs uplink {_f(up, 4)} pkt/s", down, up,
                     "pkt/s"))
    return out


def dl1ul1_mt1_numbers(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 3: the one set of numbers the text gives, and the direction (downlink ahead)."""
    return dl1ul1_numbers(ctx.cells, "fifo", claim, ctx.reference)


def dl1ul1_reverses_above_3(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: dl1-ul1 (FIFO, Q = 100): downlink ahead for M_t <= 3, uplink ahead for M_t > 3."""
    q, turn = int(claim["where"]["q"]), int(claim["where"]["reverses_above"])
    for mt in ctx.cells.grid_mts("dl1-ul1", "fifo", q):
        r, cell = ctx.cells.m("dl1-ul1", "fifo", q, mt, RATIO), ctx.cells.at("dl1-ul1", "fifo", q, mt)
        if mt <= turn:
            yield _once(above(_at("dl1-ul1", q, mt), f"ratio {_f(r)} (paper: downlink ahead, above 1)", r, 1.0),
                        "downlink ahead", cell)
        else:
            yield _once(below(_at("dl1-ul1", q, mt), f"ratio {_f(r)} (paper: uplink ahead, below 1)", r, 1.0),
                        "uplink ahead", cell)


def dl1ul1_unbalanced(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III (summary): the ratio is unbalanced even in dl1-ul1: outside "about 1:1" at M_t = 1
    (downlink ahead, the paper's numbers) and at every M_t past the reversal (uplink ahead). In
    between the paper's ratio crosses 1:1 on its way, so M_t 2 to the reversal is no condition."""
    q, turn = int(claim["where"]["q"]), int(claim["where"]["reverses_above"])
    low, high = about_one(claim)
    for mt in ctx.cells.grid_mts("dl1-ul1", "fifo", q):
        r, cell = ctx.cells.m("dl1-ul1", "fifo", q, mt, RATIO), ctx.cells.at("dl1-ul1", "fifo", q, mt)
        if mt == 1:
            yield _once(above(_at("dl1-ul1", q, mt), f"ratio {_f(r)} (unbalanced: above about 1:1, {high:.3f})",
                              r, high), "above 1:1", cell)
        elif mt > turn:
            yield _once(below(_at("dl1-ul1", q, mt), f"ratio {_f(r)} (unbalanced: below about 1:1, {low:.3f})",
                              r, low), "below 1:1", cell)


def mt1_ratio(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 2 at M_t = 1: dl2-ul2 about 1:1 with Q of 50-200, uplink favoured with smaller Q;
    dl4-ul4 downlink ahead."""
    low, high = about_one(claim)
    w = claim["where"]
    for q in ctx.cells.grid_qs("dl2-ul2", "fifo"):
        r, cell = ctx.cells.m("dl2-ul2", "fifo", q, 1, RATIO), ctx.cells.at("dl2-ul2", "fifo", q, 1)
        if q >= int(w["large_q_min"]):
            yield _once(inside(_at("dl2-ul2", q, 1), f"ratio {_f(r)} (about 1:1: {low:.3f} to {high:.3f})", r, low,
                               high), "about 1:1", cell)
        else:
            yield _once(below(_at("dl2-ul2", q, 1), f"ratio {_f(r)} (uplink favoured: below 1)", r, 1.0),
                        "uplink favoured", cell)
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        r, cell = ctx.cells.m("dl4-ul4", "fifo", q, 1, RATIO), ctx.cells.at("dl4-ul4", "fifo", q, 1)
        yield _once(above(_at("dl4-ul4", q, 1), f"ratio {_f(r)} (downlink ahead: above 1)", r, 1.0),
                    "downlink ahead", cell)


def mt2_comparisons(cells: Cells, scen: str, variant: str, qs: list[int]) -> list[Comparison]:
    """Fig 2's M_t = 2 in one scenario and setting: from M_t = 1 to 2 the downlink goodput rises and
    the uplink's falls at each Q; at M_t = 2 the ratio grows with Q, the downlink ahead at the
    largest."""
    out = []
    for q in qs:
        c1, c2 = cells.at(scen, variant, q, 1), cells.at(scen, variant, q, 2)
        d1, d2, u1, u2 = measure(c1, DOWN), measure(c2, DOWN), measure(c1, UP), measure(c2, UP)
        where = f"{scen}, Q = {q}, M_t 1 -> 2"
        out.append(_once(above(where, f"downlink {_f(d2, 4)} vs {_f(d1, 4)} pkt/s (paper: increases)", d2, d1,
                               "pkt/s"), "downlink rises", c1, c2))
        out.append(_once(below(where, f"uplink {_f(u2, 4)} vs {_f(u1, 4)} pkt/s (paper: at the uplink's expense)",
                               u2, u1, "pkt/s"), "uplink falls", c1, c2))
    for a, b in itertools.pairwise(qs):
        ra, rb = (cells.m(scen, variant, q, 2, RATIO) for q in (a, b))
        text = f"ratio {_f(rb)} at Q = {b} vs {_f(ra)} at Q = {a}"
        out.append(_once(above(f"{scen}, M_t = 2, Q = {a} -> {b}", text, rb, ra), "ratio grows with Q",
                         cells.at(scen, variant, a, 2), cells.at(scen, variant, b, 2)))
    if qs:
        r = cells.m(scen, variant, qs[-1], 2, RATIO)
        out.append(_once(above(_at(scen, qs[-1], 2), f"ratio {_f(r)} (the downlink higher than the uplink: above 1)",
                               r, 1.0), "downlink ahead", cells.at(scen, variant, qs[-1], 2)))
    return out


def mt2_downlink_gains(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 2: with M_t = 2 the downlink goodput increases at the uplink's expense; the larger
    the AP buffer, the more the downlink's goodput is above the uplink's."""
    for scen in _scens(claim):
        yield from mt2_comparisons(ctx.cells, scen, "fifo", ctx.cells.grid_qs(scen, "fifo"))


def _apart(where: str, what: str, a: Measure | None, b: Measure | None, k: float,
           cells: tuple[dict[str, Any] | None, ...]) -> Comparison:
    """Two log ratios farther apart than "about the same" (a factor k either way)."""
    d = _magnitude(difference(a, b))
    text = f"{what}: |log ratio| apart {_f(d)} (more than about the same: log {k:g} = {math.log(k):.3g})"
    return _once(above(where, text, d, math.log(k)), "apart", *cells)


def ratio_depends_on_mt_and_q(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 2: the ratio is influenced significantly by M_t and by the AP buffer: from M_t = 1
    to the axis' end at each Q, and from the smallest Q to the largest at the M_t where the paper
    describes the buffer's effect, the ratios differ by more than "about 1:1" allows."""
    k = _bar(claim, "about_one")
    for scen in _scens(claim):
        qs = ctx.cells.grid_qs(scen, "fifo")
        for q in qs:
            first, last = (lambda m: (m[0], m[-1]))(ctx.cells.grid_mts(scen, "fifo", q))
            ca, cb = ctx.cells.at(scen, "fifo", q, first), ctx.cells.at(scen, "fifo", q, last)
            yield _apart(f"{scen}, Q = {q}, M_t {first} vs {last}", f"ratio {_f(measure(ca, RATIO))} vs "
                         f"{_f(measure(cb, RATIO))}", _log_ratio(ca), _log_ratio(cb), k, (ca, cb))
        for mt in claim["where"]["q_effect_mts"]:
            ca, cb = ctx.cells.at(scen, "fifo", qs[0], mt), ctx.cells.at(scen, "fifo", qs[-1], mt)
            yield _apart(f"{scen}, M_t = {mt}, Q {qs[0]} vs {qs[-1]}", f"ratio {_f(measure(ca, RATIO))} vs "
                         f"{_f(measure(cb, RATIO))}", _log_ratio(ca), _log_ratio(cb), k, (ca, cb))


def small_buffers_favour_uplink(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: small AP buffers (Q <= small_q_max) favour the uplink by raising the downlink DATA
    loss: against the largest Q, a lower ratio and a higher downlink loss at each M_t."""
    for scen in _scens(claim):
        qs = ctx.cells.grid_qs(scen, "fifo")
        large = qs[-1]
        for small in (q for q in qs if q <= int(claim["where"]["small_q_max"])):
            for mt in ctx.cells.grid_mts(scen, "fifo", small):
                cs, cl = ctx.cells.at(scen, "fifo", small, mt), ctx.cells.at(scen, "fifo", large, mt)
                r_s, r_l = measure(cs, RATIO), measure(cl, RATIO)
                l_s, l_l = measure(cs, DOWN_LOSS), measure(cl, DOWN_LOSS)
                where = f"{scen}, M_t = {mt}, Q = {small} vs {large}"
                yield _once(below(where, f"ratio {_f(r_s)} vs {_f(r_l)}", r_s, r_l), "ratio lower", cs, cl)
                yield _once(above(where, f"downlink DATA loss {_pct(l_s)} vs {_pct(l_l)}", l_s, l_l), "loss higher",
                            cs, cl)


def large_buffers_ease_downlink(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: large AP buffers alleviate the throttling of the downlink: downlink goodput at the
    largest Q above that at the smallest, at each M_t."""
    for scen in _scens(claim):
        qs = ctx.cells.grid_qs(scen, "fifo")
        for mt in ctx.cells.grid_mts(scen, "fifo", qs[-1]):
            cs, cl = ctx.cells.at(scen, "fifo", qs[0], mt), ctx.cells.at(scen, "fifo", qs[-1], mt)
            d_s, d_l = measure(cs, DOWN), measure(cl, DOWN)
            yield _once(above(f"{scen}, M_t = {mt}, Q = {qs[-1]} vs {qs[0]}",
                              f"downlink {_f(d_l, 4)} vs {_f(d_s, 4)} pkt/s", d_l, d_s, "pkt/s"), "downlink more",
                        cs, cl)


def many_attempts_favour_uplink(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: a high number of transmission attempts favours the uplink, which seizes the bandwidth:
    at the largest M_t the ratio is below 1 and below its value at M_t = 1, and the uplink's
    goodput above its own at M_t = 1."""
    for scen in _scens(claim):
        for q in ctx.cells.grid_qs(scen, "fifo"):
            mts = ctx.cells.grid_mts(scen, "fifo", q)
            c1, cn = ctx.cells.at(scen, "fifo", q, mts[0]), ctx.cells.at(scen, "fifo", q, mts[-1])
            first, last = measure(c1, RATIO), measure(cn, RATIO)
            u1, un = measure(c1, UP), measure(cn, UP)
            where = _at(scen, q, mts[-1])
            yield _once(below(where, f"ratio {_f(last)} (uplink ahead: below 1)", last, 1.0), "uplink ahead", cn)
            yield _once(below(where, f"ratio {_f(last)} vs {_f(first)} at M_t = {mts[0]}", last, first), "ratio falls",
                        c1, cn)
            yield _once(above(where, f"uplink {_f(un, 4)} vs {_f(u1, 4)} pkt/s at M_t = {mts[0]} (seizes the "
                                     "bandwidth)", un, u1, "pkt/s"), "uplink rises", c1, cn)


def overall_goodput_grows_with_mt(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 3: more transmission attempts raise the overall goodput: each M_t above M_t = 1."""
    q = int(claim["where"]["q"])
    for scen in _scens(claim):
        mts = ctx.cells.grid_mts(scen, "fifo", q)
        c1 = ctx.cells.at(scen, "fifo", q, mts[0])
        base = measure(c1, TOTAL)
        for mt in mts[1:]:
            c = ctx.cells.at(scen, "fifo", q, mt)
            t = measure(c, TOTAL)
            yield _once(above(_at(scen, q, mt), f"{_f(t, 4)} pkt/s vs {_f(base, 4)} at M_t = {mts[0]}", t, base,
                              "pkt/s"), "total above", c, c1)


def more_flows_worse(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: more TCP flows worsen the unbalance: where the uplink leads (M_t above the paper's
    reversal; at M_t = 1 the paper's own numbers go the other way, dl1-ul1 unbalanced and dl2-ul2
    about 1:1), the ratio moves further from 1:1 from dl1-ul1 to dl2-ul2 to dl4-ul4 (|log ratio|)."""
    q, scens = int(claim["where"]["q"]), _scens(claim)
    for mt in ctx.cells.grid_mts(scens[0], "fifo", q):
        if mt <= int(claim["where"]["reverses_above"]):
            continue
        cells = {s: ctx.cells.at(s, "fifo", q, mt) for s in scens}
        d = {s: _log_distance(c) for s, c in cells.items()}
        for a, b in itertools.pairwise(scens):
            yield _once(above(f"Q = {q}, M_t = {mt}, {a} -> {b}", f"|log ratio| {_f(d[b])} ({b}) vs {_f(d[a])} ({a})",
                              d[b], d[a]), "further from 1:1", cells[a], cells[b])


def ratio_below_saturation_share(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III: with TCP the downlink/uplink ratio falls below the 1:(n+1) of saturated 802.11 (n
    stations): the downlink starves as M_t grows. At the largest M_t, every scenario and Q."""
    for scen in _scens(claim):
        n = sum(ctx.cells.flows.get(scen, (0, 0)))
        for q in ctx.cells.grid_qs(scen, "fifo"):
            mt = ctx.cells.grid_mts(scen, "fifo", q)[-1]
            r = ctx.cells.m(scen, "fifo", q, mt, RATIO)
            share = 1 / (n + 1)
            yield _once(below(_at(scen, q, mt), f"ratio {_f(r)} vs 1/(n+1) = {share:.3g} ({n} stations)", r, share),
                        "below 1/(n+1)", ctx.cells.at(scen, "fifo", q, mt))


def uplink_loss_higher_at_mt1(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 4: dl4-ul4 at M_t = 1, the uplink's DATA loss above the downlink's, every Q."""
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        c = ctx.cells.at("dl4-ul4", "fifo", q, 1)
        up, down = measure(c, UP_LOSS), measure(c, DOWN_LOSS)
        yield _once(above(_at("dl4-ul4", q, 1), f"uplink {_pct(up)} vs downlink {_pct(down)}", up, down),
                    "uplink loss higher", c)


def _step(ctx: Context, metric: str, q: int, a: int, b: int, rising: bool, what: str) -> Comparison:
    """dl4-ul4 (FIFO, Q): the metric at M_t = b above (rising) or below that at M_t = a."""
    ca, cb = ctx.cells.at("dl4-ul4", "fifo", q, a), ctx.cells.at("dl4-ul4", "fifo", q, b)
    la, lb = measure(ca, metric), measure(cb, metric)
    text = f"{what} {_pct(lb)} at M_t = {b} vs {_pct(la)} at {a}"
    return _once((above if rising else below)(f"dl4-ul4, Q = {q}, M_t {a} -> {b}", text, lb, la),
                 f"{metric} {'rises' if rising else 'falls'}", ca, cb)


def uplink_loss_falls_with_mt(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 4a: dl4-ul4, the uplink DATA loss decreases monotonically with M_t: from M_t = 1 to
    the axis' end (it decreases), and every step (monotonically)."""
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        mts = ctx.cells.grid_mts("dl4-ul4", "fifo", q)
        yield _step(ctx, UP_LOSS, q, mts[0], mts[-1], False, "uplink DATA loss")
        for a, b in itertools.pairwise(mts):
            yield _step(ctx, UP_LOSS, q, a, b, False, "uplink DATA loss")


def downlink_loss_dips_at_mt2(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 4b: dl4-ul4, the downlink DATA loss decreases until M_t = 2, then increases again:
    the step 1 -> 2 down, from M_t = 2 to the axis' end up, and every step after M_t = 2 up."""
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        mts = ctx.cells.grid_mts("dl4-ul4", "fifo", q)
        for a, b in itertools.pairwise([m for m in mts if m <= 2]):
            yield _step(ctx, DOWN_LOSS, q, a, b, False, "downlink DATA loss")
        after = [m for m in mts if m >= 2]
        if len(after) > 2:
            yield _step(ctx, DOWN_LOSS, q, after[0], after[-1], True, "downlink DATA loss")
        for a, b in itertools.pairwise(after):
            yield _step(ctx, DOWN_LOSS, q, a, b, True, "downlink DATA loss")


def loss_causes(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """III, Fig 4: dl4-ul4, the uplink's DATA loss is mainly collisions (more than the bar's share
    of its lost segments dropped after their last MAC attempt), at each M_t; the downlink's combines
    collisions, which decrease as M_t grows, and AP-buffer overflows, which increase (M_t = 1 against
    the axis' end)."""
    mainly = _bar(claim, "mainly")
    for q in ctx.cells.grid_qs("dl4-ul4", "fifo"):
        mts = ctx.cells.grid_mts("dl4-ul4", "fifo", q)
        for mt in mts:
            c = ctx.cells.at("dl4-ul4", "fifo", q, mt)
            share = per_trial(c, [UP_LOSS_MAC, UP_LOSS], lambda mac, lost: mac / lost if lost > 0 else None)
            text = (f"collisions' share of the uplink's lost DATA {_f(share)} (uplink DATA loss "
                    f"{_pct(measure(c, UP_LOSS))}; mainly: above {mainly:g})")
            yield _once(above(_at("dl4-ul4", q, mt), text, share, mainly), "uplink mainly collisions", c)
        yield _step(ctx, DOWN_LOSS_MAC, q, mts[0], mts[-1], False, "downlink DATA lost to collisions")
        yield _step(ctx, DOWN_LOSS_AP_QUEUE, q, mts[0], mts[-1], True, "downlink DATA lost in the AP buffer")


# ---------------------------------------------------------------- Section IV: the DATA/ACK scheduler

def _fifo_leads(ctx: Context, scen: str, q: int, mt: int) -> bool:
    f = ctx.cells.m(scen, "fifo", q, mt, RATIO)
    return f is not None and f.noise is not None and f.value - 1 > f.noise


def _no_fairer(ctx: Context, scen: str, q: int, mt: int, k: float) -> Comparison:
    """The scheduler brings the ratio no nearer 1:1 than FIFO's by more than "about the same"."""
    cs, cf = ctx.cells.at(scen, "dataack", q, mt), ctx.cells.at(scen, "fifo", q, mt)
    gain = difference(_log_distance(cf), _log_distance(cs))
    text = (f"ratio with the scheduler {_f(measure(cs, RATIO))} vs FIFO {_f(measure(cf, RATIO))}: nearer 1:1 by "
            f"{_f(gain)} in |log ratio| (not fairer: below log {k:g} = {math.log(k):.3g})")
    return _once(below(_at(scen, q, mt), text, gain, math.log(k)), "no fairer", cs, cf)


def scheduler_no_help_where_downlink_leads(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV, Figs 6 against 2: where the downlink's goodput is above the uplink's, the scheduler does
    not increase fairness: its ratio no nearer 1:1 than FIFO's. Conditions: the cells the paper's
    text places there (dl4-ul4 at M_t = 1, `where.paper_region`), and every other cell of Figs 2/6
    where FIFO's ratio is above 1 beyond its noise; a paper-named cell where FIFO's downlink does
    not lead is missing (the premise is mt1_ratio's)."""
    k = _bar(claim, "about_one")
    named = {(r["scenario"], q, int(r["mt"])) for r in claim["where"]["paper_region"]
             for q in ctx.cells.grid_qs(r["scenario"], "fifo")}
    for scen in _scens(claim):
        for q in ctx.cells.grid_qs(scen, "fifo"):
            for mt in ctx.cells.grid_mts(scen, "fifo", q):
                if _fifo_leads(ctx, scen, q, mt):
                    yield _no_fairer(ctx, scen, q, mt, k)
                elif (scen, q, mt) in named:
                    yield missing(_at(scen, q, mt), "the scheduler no fairer than FIFO",
                                  "FIFO's downlink does not lead here beyond its noise (or was not measured)")


def scheduler_balances(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV, Figs 6-7: with the DATA/ACK scheduler the goodput ratio is about 1:1 for M_t > 5 when
    Q >= 50 (Fig 6: dl2-ul2, dl4-ul4; Fig 7: dl1-ul1 too, at Q = 100), and in Fig 7 the two goodputs
    converge as M_t increases (|log ratio| at the axis' end below that at M_t = 1)."""
    low, high = about_one(claim)
    w = claim["where"]
    keys = {k for s in w["scenarios"] for k in ctx.cells.grid(s, "dataack") if k[2] >= int(w["q_min"])}
    keys |= {k for s in w["fig7_scenarios"] for k in ctx.cells.grid(s, "dataack", int(w["fig7_q"]))}
    for scen, _, q, mt in sorted(keys):
        if mt > int(w["mt_above"]):
            r, c = ctx.cells.m(scen, "dataack", q, mt, RATIO), ctx.cells.at(scen, "dataack", q, mt)
            yield _once(inside(_at(scen, q, mt), f"ratio {_f(r)} (about 1:1: {low:.3f} to {high:.3f})", r, low, high),
                        "about 1:1", c)
    q = int(w["fig7_q"])
    for scen in w["fig7_scenarios"]:
        mts = ctx.cells.grid_mts(scen, "dataack", q)
        c1, cn = ctx.cells.at(scen, "dataack", q, mts[0]), ctx.cells.at(scen, "dataack", q, mts[-1])
        d1, dn = _log_distance(c1), _log_distance(cn)
        yield _once(below(f"{scen}, Q = {q}, M_t {mts[0]} -> {mts[-1]}", f"|log ratio| {_f(dn)} at M_t = {mts[-1]} vs "
                          f"{_f(d1)} at {mts[0]} (the goodputs converge)", dn, d1), "converge", c1, cn)


def scheduler_alleviates_unfairness(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """V (and IV, Figs 6-7 against 2-3): the scheduler succeeds in alleviating the uplink/downlink
    unfairness: where FIFO's uplink leads (M_t above the paper's reversal; where the downlink leads
    the paper says it does not help), its ratio nearer 1:1 than FIFO's (|log ratio|)."""
    turn = int(claim["where"]["reverses_above"])
    for scen in _scens(claim):
        for q in ctx.cells.grid_qs(scen, "dataack"):
            for mt in (m for m in ctx.cells.grid_mts(scen, "dataack", q) if m > turn):
                cs, cf = ctx.cells.at(scen, "dataack", q, mt), ctx.cells.at(scen, "fifo", q, mt)
                ds, df = _log_distance(cs), _log_distance(cf)
                text = (f"|log ratio| with the scheduler {_f(ds)} (ratio {_f(measure(cs, RATIO))}) vs FIFO {_f(df)} "
                        f"(ratio {_f(measure(cf, RATIO))})")
                yield _once(below(_at(scen, q, mt), text, ds, df), "nearer 1:1", cs, cf)


def scheduler_slows_uplink_senders(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV (Figs 8 against 4): the separation of the ACKs slows the stations' TCP senders: dl4-ul4,
    the uplink goodput with the scheduler below FIFO's, every Q and M_t."""
    for q in ctx.cells.grid_qs("dl4-ul4", "dataack"):
        for mt in ctx.cells.grid_mts("dl4-ul4", "dataack", q):
            cs, cf = ctx.cells.at("dl4-ul4", "dataack", q, mt), ctx.cells.at("dl4-ul4", "fifo", q, mt)
            s, f = measure(cs, UP), measure(cf, UP)
            yield _once(below(_at("dl4-ul4", q, mt), f"uplink {_f(s, 4)} pkt/s with the scheduler vs {_f(f, 4)} with "
                                                     "FIFO", s, f, "pkt/s"), "uplink slower", cs, cf)


def scheduler_cuts_downlink_loss(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV, Fig 8b against 4b: dl4-ul4, the scheduler reduces the downlink DATA loss, every Q and M_t."""
    for q in ctx.cells.grid_qs("dl4-ul4", "dataack"):
        for mt in ctx.cells.grid_mts("dl4-ul4", "dataack", q):
            cs, cf = ctx.cells.at("dl4-ul4", "dataack", q, mt), ctx.cells.at("dl4-ul4", "fifo", q, mt)
            s, f = measure(cs, DOWN_LOSS), measure(cf, DOWN_LOSS)
            yield _once(below(_at("dl4-ul4", q, mt), f"downlink DATA loss {_pct(s)} with the scheduler vs {_pct(f)} "
                                                     "with FIFO", s, f), "loss lower", cs, cf)


def scheduler_keeps_uplink_loss(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """IV, Fig 8a against 4a: dl4-ul4, the uplink DATA loss does not change with the scheduler: the
    scheduler's loss within a factor of the bar of FIFO's, either way, every Q and M_t (the noise of
    both cells)."""
    k = _bar(claim, "same_factor")
    for q in ctx.cells.grid_qs("dl4-ul4", "dataack"):
        for mt in ctx.cells.grid_mts("dl4-ul4", "dataack", q):
            cs, cf = ctx.cells.at("dl4-ul4", "dataack", q, mt), ctx.cells.at("dl4-ul4", "fifo", q, mt)
            s, f = measure(cs, UP_LOSS), measure(cf, UP_LOSS)
            low, high = (f.value / k, f.value * k) if f else (0.0, 0.0)
            text = (f"uplink DATA loss {_pct(s)} with the scheduler vs {_pct(f)} with FIFO (the same: within a "
                    f"factor {k:g})")
            yield _once(inside(_at("dl4-ul4", q, mt), text, _beside(s, f), low, high), "loss unchanged", cs, cf)


def _off_target(cell: dict[str, Any] | None, target: float) -> Measure | None:
    """|log(ratio / target)| per trial: how far from the target ratio, either way."""
    return per_trial(cell, [RATIO], lambda r: abs(math.log(r / target)) if r > 0 else None)


def adaptive_tracks_flow_ratio(ctx: Context, claim: dict[str, Any]) -> Iterable[Comparison]:
    """Beyond the paper: weights 2 N_down : N_up hold the ratio inside the 1:1 band scaled to
    N_down/N_up, and closer to that target (|log ratio / target|) than FIFO and the fixed scheduler."""
    low, high = about_one(claim)
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
            ca = ctx.cells.at(scen, "adaptive", q, mt)
            a = measure(ca, RATIO)
            yield _once(inside(where, f"adaptive ratio {_f(a)} (target {target:g}: {low * target:.3g} to "
                                      f"{high * target:.3g})", a, low * target, high * target), "near target", ca)
            cells = {v: ctx.cells.at(scen, v, q, mt) for v in spec["variants"]}
            off = {v: _off_target(c, target) for v, c in cells.items()}
            for other in (v for v in spec["variants"] if v != "adaptive"):
                yield _once(below(where, f"|log(ratio / target)|: adaptive {_f(off['adaptive'])} vs {other} "
                                         f"{_f(off[other])}", off["adaptive"], off[other]), f"nearer than {other}",
                            ca, cells[other])


EVALUATORS: dict[str, Callable[[Context, dict[str, Any]], Iterable[Comparison]]] = {
    f.__name__: f for f in (dl1ul1_mt1_numbers, dl1ul1_reverses_above_3, dl1ul1_unbalanced, mt1_ratio,
                            mt2_downlink_gains, ratio_depends_on_mt_and_q, small_buffers_favour_uplink,
                            large_buffers_ease_downlink, many_attempts_favour_uplink, overall_goodput_grows_with_mt,
                            more_flows_worse, ratio_below_saturation_share, uplink_loss_higher_at_mt1,
                            uplink_loss_falls_with_mt, downlink_loss_dips_at_mt2, loss_causes,
                            scheduler_no_help_where_downlink_leads, scheduler_balances, scheduler_alleviates_unfairness,
                            scheduler_slows_uplink_senders, scheduler_cuts_downlink_loss, scheduler_keeps_uplink_loss,
                            adaptive_tracks_flow_ratio)}


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
