"""Beyond the paper: the model's surplus of channel capacity as idle time per channel access, a fit.

dl1ul1_mt1_numbers: capture gives the paper's split at M_t = 1 but not its numbers, and neither
the MAC ACK rate nor the preamble accounts for the model's surplus (airtime.py). The `*-aifsn*`
setups add the same idle time before every channel access at every node (the DCF's AIFSN above
802.11b's 2, 20 us a slot), a stand-in for time the paper's cards may have lost between frames;
the backoff, and so the collision probability, stay as they were. Two parameters (capture, idle
time) swept towards the paper's numbers make a fit, not an explanation: the section says so, with
the range tried and the paper's words against the fitted values (the claim's `investigation.fit`).
This module reads the sweep against the claim's own comparisons, setting by setting, and the
settings run at M_t 1-4 against the paper's direction there (downlink ahead up to M_t = 3,
dl1ul1_reverses_above_3).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from analysis.report.captions import draws
from analysis.verdicts import Comparison, Measure, above, below, judge
from analysis.wlan.claims import DOWN, RATIO, TOTAL, UP, dl1ul1_numbers, fixed, paper_band
from analysis.wlan.run import VARIANT_STYLE, Run, fit_lines

SECTION = "Beyond the paper: the surplus as idle time per channel access"
FIGURE = "investigation_idle"
BASES = ("fifo", "fifo-capture")
SCEN, Q = "dl1-ul1", 100
SLOT_US, DIFS_AIFSN = 20, 2
BASE_LABEL = {"fifo": "as configured", "fifo-capture": "capture"}


@dataclass
class Setting:
    """One setting at M_t = 1: its idle time per access, numbers and the claim judged on it."""
    base: str
    variant: str
    idle_us: float
    ms: dict[str, Measure | None]
    comparisons: list[Comparison]
    verdict: str


def idle_us(aifsn: int) -> float:
    """Idle time an access waits beyond 802.11b's DIFS."""
    return (aifsn - DIFS_AIFSN) * SLOT_US


def variants(run: Run, base: str) -> list[tuple[float, str]]:
    """(idle us, variant) of the base setting and its `<base>-aifsn<N>` setups run at M_t = 1, by idle time."""
    cells = run.index()
    out = {}
    for p in run.params.values():
        v = str(p["variant"])
        if p["scen"] == SCEN and int(p["q"]) == Q and (v == base or v.removeprefix(f"{base}-aifsn").isdigit()) \
                and cells.m(SCEN, v, Q, 1, TOTAL) is not None:
            out[v] = idle_us(int(p.get("aifsn", DIFS_AIFSN)))
    return sorted((us, v) for v, us in out.items())


def sweep(run: Run) -> list[Setting]:
    """Every setting of the sweep that was run, with the claim's comparisons on its M_t = 1 cell."""
    claim = _claim(run, "dl1ul1_mt1_numbers")
    cells = run.index()
    out = []
    for base in BASES:
        for us, v in variants(run, base):
            comps = dl1ul1_numbers(cells, v, claim, run.reference)
            ms = {k: cells.m(SCEN, v, Q, 1, k) for k in (TOTAL, DOWN, UP, RATIO)}
            out.append(Setting(base, v, us, ms, comps, judge(claim, comps).verdict))
    return out


def _claim(run: Run, claim_id: str) -> dict:
    return next(c for c in run.reference["claims"] if c["id"] == claim_id)


def direction(run: Run, variant: str) -> list[Comparison]:
    """The paper's direction at M_t 1-4 (dl1ul1_reverses_above_3): downlink ahead up to its turn,
    uplink ahead after it, for a setting run at more than M_t = 1."""
    claim = _claim(run, "dl1ul1_reverses_above_3")
    turn = int(claim["where"]["reverses_above"])
    cells = run.index()
    out = []
    for mt in cells.mts(SCEN, variant, Q):
        r = cells.m(SCEN, variant, Q, mt, RATIO)
        if mt <= turn:
            out.append(above(f"M_t = {mt}", f"ratio {fixed(r)} (paper: downlink ahead)", r, 1.0))
        else:
            out.append(below(f"M_t = {mt}", f"ratio {fixed(r)} (paper: uplink ahead)", r, 1.0))
    return out


def _multi_mt(run: Run) -> list[str]:
    """Settings of the sweep run at more M_t than 1, besides the model as configured (whose
    direction is the claim dl1ul1_reverses_above_3 itself)."""
    cells = run.index()
    return [v for base in BASES for _, v in variants(run, base) if v != "fifo" and len(cells.mts(SCEN, v, Q)) > 1]


@draws(FIGURE, title=lambda ref, stem: SECTION)
def fig_idle(run: Run) -> list[Path]:
    """Left: dl1-ul1's goodput at M_t = 1 against the idle time per access, as configured and with
    capture, the paper's numbers as lines. Right: the down/up ratio against M_t for the settings run
    there, the paper's direction shaded."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    points = sweep(run)
    if not any(p.idle_us > 0 for p in points):
        return []
    paper = run.reference["tables"]["dl1ul1_mt1"]["values"]["dl1-ul1-fifo-q100-mt1"]
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.4), gridspec_kw={"wspace": 0.28})
    styles = {TOTAL: ("-", "total"), DOWN: ("--", "down"), UP: (":", "up")}
    cells = run.index()
    for base in BASES:
        st = VARIANT_STYLE[base]
        for metric, (ls, name) in styles.items():
            xs, mid, lo, hi = [], [], [], []
            for p in (p for p in points if p.base == base):
                at1 = [c for c in cells.curve(SCEN, p.variant, Q, metric) if c.mt == 1]
                if at1:
                    xs.append(p.idle_us)
                    mid.append(at1[0].mean)
                    lo.append(at1[0].mean - at1[0].low)
                    hi.append(at1[0].high - at1[0].mean)
            left.errorbar(xs, mid, yerr=[lo, hi], color=st["color"], marker=st["marker"], linestyle=ls, capsize=3,
                          label=f"{BASE_LABEL[base]}: {name}")
    for value, name in zip(paper[:3], ("total", "down", "up"), strict=True):
        left.axhline(value, color="k", lw=0.8, ls=styles[{"total": TOTAL, "down": DOWN, "up": UP}[name]][0])
        left.text(0, value, f" paper {name}: {value:g}", fontsize=7, va="bottom")
    left.set(xlabel="idle time before every channel access beyond DIFS (us)",
             ylabel="goodput (packets/s; trimmed mean, bars: trial range)",
             title="dl1-ul1, FIFO, Q = 100, M_t = 1")
    left.grid(alpha=0.3)
    left.legend(fontsize=6.5, ncol=2)
    shown = _multi_mt(run)
    for v in ["fifo", *shown]:
        curve = cells.curve(SCEN, v, Q, RATIO)
        if len(curve) < 2:
            continue
        st = VARIANT_STYLE.get(v, VARIANT_STYLE["fifo-capture"])
        right.errorbar([c.mt for c in curve], [c.mean for c in curve],
                       yerr=[[c.mean - c.low for c in curve], [c.high - c.mean for c in curve]], capsize=3,
                       color=st["color"], marker=st["marker"], linestyle="-" if "aifsn" not in v else "--",
                       label=_label(run, v))
    right.axhline(1.0, color="k", lw=0.6)
    right.axvspan(0.5, 3.5, color="#1f77b4", alpha=0.06, label="paper: downlink ahead (ratio > 1)")
    right.axvspan(3.5, 8.5, color="#d62728", alpha=0.06, label="paper: uplink ahead")
    right.set(xlabel="M_t (MAC transmission attempts)", ylabel="downlink / uplink goodput", yscale="log",
              xlim=(0.5, 8.5), title="dl1-ul1, FIFO, Q = 100: the split against M_t")
    right.yaxis.set_major_formatter(ScalarFormatter())
    right.yaxis.set_minor_formatter(NullFormatter())
    right.set_yticks([0.5, 0.7, 1, 1.5, 2, 3])
    right.grid(alpha=0.3, which="both")
    right.legend(fontsize=6.5)
    fig.suptitle("Beyond the paper: the model's surplus as idle time per channel access (dl1ul1_mt1_numbers)",
                 fontsize=10)
    names = sorted({p.variant for p in points} | set(shown))
    run.caption(fig, "investigation_idle.fig_idle", f"dl1-ul1-{{{','.join(names)}}}-q100-mt*")
    return run.save(fig, FIGURE)


def _label(run: Run, variant: str) -> str:
    base = "fifo-capture" if variant.startswith("fifo-capture") else "fifo"
    us = dict((v, u) for u, v in variants(run, base)).get(variant, 0.0)
    return f"{BASE_LABEL[base]}" + (f", {us:.0f} us idle per access" if us else "")


def _held_text(points: list[Setting], band: tuple[float, float]) -> str:
    reproduced = [p for p in points if p.verdict == "reproduced"]
    if reproduced:
        return ("The claim's comparisons all hold under " + "; ".join(f"{BASE_LABEL[p.base]} with {p.idle_us:.0f} us"
                                                                       for p in reproduced) + ".")
    return (f"No setting of the sweep gives the claim's numbers within the paper's printed precision (the total "
            f"{band[0]:g} to {band[1]:g} pkt/s, and the same band around the downlink's and the uplink's).")


def section(run: Run) -> list[str]:
    points = sweep(run)
    if not any(p.idle_us > 0 for p in points):
        return []
    paper = run.reference["tables"]["dl1ul1_mt1"]["values"]["dl1-ul1-fifo-q100-mt1"]
    band = paper_band(_claim(run, "dl1ul1_mt1_numbers"), float(paper[0]))
    out = [f"## {SECTION}", "",
           "dl1-ul1, FIFO, Q = 100: the same idle time before every channel access at every node (the DCF's AIFSN "
           f"above 802.11b's {DIFS_AIFSN}, {SLOT_US} us a slot), as configured and with capture, a stand-in for "
           "time the paper's cards may have lost between frames; the backoff, and so the collision probability, "
           "stay as they were. The amount is swept, not measured on the paper's cards. Figure: investigation_idle. "
           "Each setting is judged by dl1ul1_mt1_numbers' own comparisons (total, down, up about the paper's, "
           "downlink ahead).", "", *fit_lines(_claim(run, "dl1ul1_mt1_numbers")),
           "| setting | idle per access (us) | total (pkt/s) | down | up | down/up | claim's comparisons | verdict |",
           "|---|---|---|---|---|---|---|---|"]
    for p in points:
        held = sum(c.outcome == "held" for c in p.comparisons)
        out.append(f"| {BASE_LABEL[p.base]} | {p.idle_us:.0f} | {fixed(p.ms[TOTAL], 0)} | {fixed(p.ms[DOWN], 0)} | "
                   f"{fixed(p.ms[UP], 0)} | {fixed(p.ms[RATIO])} | {held} of {len(p.comparisons)} held | "
                   f"{p.verdict} |")
    out += [f"| paper | | {paper[0]:g} | {paper[1]:g} | {paper[2]:g} | {paper[3]:g} | | |", ""]
    text = _held_text(points, band)
    for v in _multi_mt(run):
        comps = direction(run, v)
        wrong = [c for c in comps if c.outcome != "held"]
        mts = ", ".join(c.where.removeprefix("M_t = ") for c in comps)
        text += (f" {_label(run, v).capitalize()}, M_t {mts}: "
                 + ("the paper's direction at every M_t." if not wrong else
                    "against the paper's direction at " + "; ".join(f"{c.where} ({c.text}, {c.outcome})"
                                                                     for c in wrong) + "."))
    out.append(text)
    return [*out, ""]
