"""Beyond the paper: two investigations of claims the model does not reproduce.

- The ACK queue the DATA/ACK scheduler's 1:1 needs (scheduler_balances). With two or four uplink
  flows the paper's scheduler keeps the uplink ahead in the model: the AP's ACK queue Q2, of Q
  packets, overflows, and an uplink sender loses nothing by a dropped (cumulative) ACK. The
  `dataack-ackq*` setups give Q2 200, 400 and 1000 packets at Q = 100; the section says from which
  size on the ratio is about 1:1 at every M_t > 5 the claim names.
- dl1-ul1 at M_t = 1 (dl1ul1_mt1_numbers): the paper's 250 down / 120 up packets/s against the
  model's more even split. The `fifo-bic` and `fifo-delack200` setups change what the paper's
  Linux 2.6 hosts did differently from the model's TCP: BIC, the default congestion control of
  the paper's kernels, and the delayed-ACK timer at Linux's 200-ms maximum; `fifo-macq8` its
  cards' larger TX ring; `fifo-fer5` and `fifo-capture` (also run for mt2_downlink_gains,
  investigation_channel.py) what its channel may have done: frame errors besides collisions, and
  capture where stations hear each other weaker than the AP.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.report.captions import draws
from analysis.verdicts import Measure, inside
from analysis.wlan import airtime, investigation_channel, investigation_idle, investigation_streams
from analysis.wlan.claims import DOWN, RATIO, TOTAL, UP, Cells, about_one, fixed, paper_band
from analysis.wlan.run import VARIANT_STYLE, Run, fit_lines

ACK_SECTION = "Beyond the paper: the ACK queue the scheduler's 1:1 needs"
DL1_SECTION = "Beyond the paper: dl1-ul1's uplink at M_t = 1"
# The settings run beside the model as configured, with what each changes.
DL1_VARIANTS = {"fifo": "",
                "fifo-bic": "BIC, the default congestion control of Linux 2.6.8 to 2.6.18",
                "fifo-delack200": "the delayed-ACK timer at Linux's 200-ms maximum instead of its 40-ms minimum",
                "fifo-macq8": "the cards' TX ring at 8 frames instead of 2 (a Prism2 card's firmware holds several)",
                "fifo-fer5": "5 % of full-size frames lost to channel errors besides collisions",
                "fifo-capture": "capture: stations on a 5-m circle, so the AP's frame survives an overlap at a station"}


def _claim(run: Run, claim_id: str) -> dict[str, Any]:
    return next(c for c in run.reference["claims"] if c["id"] == claim_id)


# ------------------------------------------------------------------------------------------------
# The ACK queue
# ------------------------------------------------------------------------------------------------

def ack_queue_sizes(run: Run, cells: Cells, scen: str) -> list[tuple[int, str]]:
    """(Q2 size, variant) of the scheduler's setups at the investigation's Q, smallest first: the
    paper's own (Q2 = Q) and every `dataack-ackq*` one that was run."""
    spec = run.reference["beyond"]["ack_queue"]
    q = int(spec["q"])
    out = []
    for v in spec["variants"]:
        if v == "dataack" or v.startswith("dataack-ackq"):
            size = q if v == "dataack" else int(v.removeprefix("dataack-ackq"))
            if cells.mts(scen, v, q):
                out.append((size, v))
    return sorted(out)


def ack_queue_outcomes(run: Run) -> dict[str, list[tuple[int, dict[int, str], dict[int, Measure | None]]]]:
    """Per scenario and ACK-queue size, the ratio at each M_t the claim names (above its mt_above)
    and whether it is about 1:1 under the verdict rule (held: the whole trial range inside the
    band; failed; indistinguishable)."""
    cells = run.index()
    claim = _claim(run, "scheduler_balances")
    low, high = about_one(claim)
    q = int(run.reference["beyond"]["ack_queue"]["q"])
    out: dict[str, list[tuple[int, dict[int, str], dict[int, Measure | None]]]] = {}
    for scen in run.reference["beyond"]["ack_queue"]["scenarios"]:
        rows = []
        for size, v in ack_queue_sizes(run, cells, scen):
            mts = [mt for mt in cells.grid_mts(scen, v, q) if mt > int(claim["where"]["mt_above"])]
            ms = {mt: cells.m(scen, v, q, mt, RATIO) for mt in mts}
            rows.append((size, {mt: inside("", "", m, low, high).outcome for mt, m in ms.items()}, ms))
        if rows:
            out[scen] = rows
    return out


def ack_queue_section(run: Run) -> list[str]:
    found = ack_queue_outcomes(run)
    if not any(len(rows) > 1 for rows in found.values()):
        return []
    claim = _claim(run, "scheduler_balances")
    low, high = about_one(claim)
    q = int(run.reference["beyond"]["ack_queue"]["q"])
    out = [f"## {ACK_SECTION}", "",
           f"The paper's DATA/ACK scheduler at Q = {q} with its ACK queue Q2 of Q packets (`dataack`) and of 200, "
           "400 and 1000 packets (`dataack-ackq*`), all else equal. Figure: beyond_ack_queue. 'held': the ratio's "
           f"whole trial range inside {low:.3f} to {high:.3f} (about 1:1, the claim's band); 'failed': outside; "
           "'indistinguishable': straddling a bound.", "", *fit_lines(claim)]
    verdict_lines = []
    for scen, rows in found.items():
        needed = next((size for size, outcome, _ in rows
                       if outcome and all(o == "held" for o in outcome.values())), None)
        mts = sorted({mt for _, outcome, _ in rows for mt in outcome})
        if needed is None:
            verdict_lines.append(f"{scen}: no ACK queue up to {rows[-1][0]} packets gives about 1:1 at every M_t "
                                 f"of {', '.join(map(str, mts))}.")
        else:
            below = [size for size, _, _ in rows if size < needed]
            at = next(sorted(outcome) for size, outcome, _ in rows if size == needed)
            not_with = f", not with {', '.join(map(str, below))}." if below else "."
            larger = all(all(o == "held" for o in outcome.values()) for size, outcome, _ in rows if size > needed)
            verdict_lines.append(f"{scen}: about 1:1 with an ACK queue of {needed} packets (at M_t "
                                 f"{', '.join(map(str, at))})" + (" and every larger one run" if larger else "")
                                 + not_with)
    out += ["What the cells show: " + " ".join(verdict_lines) + " The paper does not give its ACK queue's size; "
            "its 1:1 needs one large enough that the uplink's ACKs are not dropped at the AP (bottom panels of "
            "the figure: the share of ACKs the AP dropped).", ""]
    out += ["| scenario | ACK queue (packets) | " + " | ".join(f"ratio at M_t = {mt}" for mt in (6, 7, 8)) + " |",
            "|---|---|---|---|---|"]
    for scen, rows in found.items():
        for size, outcome, ms in rows:
            out.append(f"| {scen} | {size} | " + " | ".join(
                f"{fixed(ms.get(mt))} ({outcome[mt]})" if mt in outcome else "-" for mt in (6, 7, 8)) + " |")
    return [*out, ""]


# ------------------------------------------------------------------------------------------------
# dl1-ul1 at M_t = 1
# ------------------------------------------------------------------------------------------------

@draws("investigation_dl1ul1")
def fig_dl1ul1(run: Run) -> list[Path]:
    """Beyond the paper, what could give the paper's dl1-ul1 split at M_t = 1: dl1-ul1 at Q = 100,
    downlink and uplink goodput against M_t for the model as configured and each candidate setting,
    the paper's 250 and 120 packets/s at M_t = 1 marked."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    cells = run.index()
    variants = [v for v in DL1_VARIANTS if cells.mts("dl1-ul1", v, 100)]
    if len(variants) < 2:
        return []
    paper = run.reference["tables"]["dl1ul1_mt1"]["values"]["dl1-ul1-fifo-q100-mt1"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, metric, ref, title in ((axes[0], DOWN, paper[1], "downlink"), (axes[1], UP, paper[2], "uplink")):
        for v in variants:
            pts = cells.curve("dl1-ul1", v, 100, metric)
            st = VARIANT_STYLE[v]
            ax.errorbar([p.mt for p in pts], [p.mean for p in pts],
                        yerr=[[p.mean - p.low for p in pts], [p.high - p.mean for p in pts]],
                        color=st["color"], marker=st["marker"], capsize=3, label=st["label"])
        ax.plot([1], [ref], "k*", markersize=12, label=f"paper, M_t = 1: {ref:g} pkt/s")
        ax.set(xlabel="M_t (MAC transmission attempts)", title=f"dl1-ul1, FIFO, Q = 100: {title} goodput")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("goodput (packets/s; trimmed mean, bars: trial range)")
    fig.suptitle("Beyond the paper: what could give the paper's dl1-ul1 split at M_t = 1", fontsize=10)
    run.caption(fig, "investigation.fig_dl1ul1", f"dl1-ul1-{{{','.join(variants)}}}-q100-mt*")
    return run.save(fig, "investigation_dl1ul1")


def dl1ul1_section(run: Run) -> list[str]:
    cells = run.index()
    variants = [v for v in DL1_VARIANTS if cells.m("dl1-ul1", v, 100, 1, DOWN)]
    if len(variants) < 2:
        return []
    claim = _claim(run, "dl1ul1_mt1_numbers")
    half = float(claim["bars"]["rounding_pkts_s"]["value"])
    paper = run.reference["tables"]["dl1ul1_mt1"]["values"]["dl1-ul1-fifo-q100-mt1"]
    refs = {TOTAL: paper[0], DOWN: paper[1], UP: paper[2]}
    others = [f"{DL1_VARIANTS[v]} (`{v}`)" for v in variants if v != "fifo"]
    out = [f"## {DL1_SECTION}", "",
           "dl1-ul1, FIFO, Q = 100, M_t = 1: the model as configured beside settings of the paper's testbed it does "
           f"not have, one at a time: {'; '.join(others)}. Figure: investigation_dl1ul1. Each number against the "
           f"paper's, about it (within {half:g} pkt/s, the claim's bar), under the verdict rule.", ""]
    rows = []
    for v in variants:
        ms = {k: cells.m("dl1-ul1", v, 100, 1, k) for k in (TOTAL, DOWN, UP, RATIO)}
        stand = {k: inside("", "", ms[k], *paper_band(claim, refs[k])).outcome for k in (DOWN, UP)}
        rows.append((v, ms, stand))
    base = next((ms for v, ms, _ in rows if v == "fifo"), None)
    moved = []
    for v, ms, stand in rows:
        if v == "fifo" or base is None:
            continue
        d_up = _shift(ms[UP], base[UP])
        moved.append(f"{VARIANT_STYLE[v]['label']}: uplink {fixed(ms[UP], 0)} pkt/s ({d_up}), downlink "
                     f"{fixed(ms[DOWN], 0)} ({stand[DOWN]} against {refs[DOWN]:g}; "
                     f"uplink {stand[UP]} against {refs[UP]:g})")
    if moved and base is not None:
        out += [f"What the cells show: as configured the model gives {fixed(base[DOWN], 0)} down / "
                f"{fixed(base[UP], 0)} up. " + "; ".join(moved) + ".", ""]
    out += ["| setting | total (pkt/s) | down | up | down/up | down vs paper | up vs paper |",
            "|---|---|---|---|---|---|---|"]
    for v, ms, stand in rows:
        out.append(f"| {VARIANT_STYLE[v]['label']} | {fixed(ms[TOTAL], 0)} | {fixed(ms[DOWN], 0)} | "
                   f"{fixed(ms[UP], 0)} | {fixed(ms[RATIO])} | {stand[DOWN]} | {stand[UP]} |")
    out.append(f"| paper | {refs[TOTAL]:g} | {refs[DOWN]:g} | {refs[UP]:g} | {paper[3]:g} | | |")
    return [*out, ""]


def _shift(m: Measure | None, base: Measure | None) -> str:
    """'+12 against the model as configured', or 'within the trials' range of it'."""
    if m is None or base is None:
        return "not measured"
    d = m.value - base.value
    noise = max(m.noise or 0.0, base.noise or 0.0)
    if abs(d) <= noise:
        return f"{d:+.0f}, within the trials' range ({noise:.0f}) of the model as configured"
    return f"{d:+.0f} against the model as configured"


def section(run: Run) -> list[str]:
    return (ack_queue_section(run) + dl1ul1_section(run) + airtime.section(run) + investigation_idle.section(run)
            + investigation_channel.section(run) + investigation_streams.section(run))
