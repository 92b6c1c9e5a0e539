"""Beyond the paper: M_t 6 to 8 with a random stream of its own per cell.

Trial k of every configured cell draws from ns-3 seed 1, run k, whatever its M_t: common random
numbers, so that a difference along the M_t axis is the limit's and not the draw's. A limit no
frame reaches then repeats the lower limit's run event for event (verdict.md's identical cells).
The `*-streams` setups run M_t 6, 7 and 8 with seed = M_t, independent draws as the paper's
separate runs were, for FIFO (dl1-ul1) and the DATA/ACK scheduler (dl2-ul2) at Q = 100. The
section says whether their numbers leave the trials' range of the common-stream cells, and
whether any of their frames used up its attempts (where the limit could act at all).
"""
from __future__ import annotations

from pathlib import Path

from analysis.report.captions import draws
from analysis.verdicts import Measure
from analysis.wlan.claims import DOWN, RATIO, UP, about_one, fixed, retry_drops
from analysis.wlan.run import VARIANT_STYLE, Run

SECTION = "Beyond the paper: M_t 6 to 8 with a random stream per cell"
MTS = (6, 7, 8)
Q = 100
METRICS = ((DOWN, "down", 0), (UP, "up", 0), (RATIO, "down/up", 2))


def pairs(run: Run) -> list[tuple[str, str, str]]:
    """(scenario, common-stream variant, own-stream variant) for every `*-streams` setup run."""
    cells = run.index()
    out = []
    for p in sorted(run.params.values(), key=lambda p: (p["scen"], p["variant"])):
        v = str(p["variant"])
        if v.endswith("-streams") and int(p["mt"]) == MTS[0] and cells.mts(p["scen"], v, Q):
            out.append((str(p["scen"]), v.removesuffix("-streams"), v))
    return out


def _apart(a: Measure | None, b: Measure | None) -> bool | None:
    """True: the two differ by more than either's trial range (the verdict rule's noise)."""
    if a is None or b is None:
        return None
    return abs(a.value - b.value) > max(a.noise or 0.0, b.noise or 0.0)


def section(run: Run) -> list[str]:
    found = pairs(run)
    if not found:
        return []
    cells = run.index()
    out = [f"## {SECTION}", "",
           "Trial k of every cell of the matrix draws from ns-3 seed 1, run k, whatever its M_t (common random "
           "numbers: a difference along M_t is the limit's, not the draw's), so a limit no frame reaches repeats "
           "the lower limit's run exactly. The `*-streams` cells run M_t 6, 7 and 8 with seed = M_t instead, "
           "independent draws as the paper's separate runs were. 'apart': the two differ by more than either "
           "cell's trial range; frames dropped after their last attempt show whether the limit acted at all. "
           "Figure: investigation_streams.", "",
           "| setup | M_t | streams | down (pkt/s) | up | down/up | frames that used up M_t attempts |",
           "|---|---|---|---|---|---|---|"]
    lines = []
    for scen, common, own in found:
        apart = []
        drops = 0
        for mt in MTS:
            for v, label in ((common, "seed 1 (common)"), (own, f"seed {mt} (own)")):
                ms = {k: cells.m(scen, v, Q, mt, k) for k, _, _ in METRICS}
                cell = cells.by_key.get((scen, v, Q, mt))
                d = retry_drops(cell) if cell else None
                if v == own and d:
                    drops += d
                out.append(f"| {scen}, {VARIANT_STYLE[common]['label']} | {mt} | {label} | "
                           + " | ".join(fixed(ms[k], n) for k, _, n in METRICS) + f" | {'-' if d is None else d} |")
            for k, name, _ in METRICS:
                if _apart(cells.m(scen, common, Q, mt, k), cells.m(scen, own, Q, mt, k)):
                    apart.append(f"{name} at M_t = {mt}")
        own_ratios = [cells.m(scen, own, Q, mt, RATIO) for mt in MTS]
        spread = [m.value for m in own_ratios if m is not None]
        what = (f"apart from the common-stream cells in {', '.join(apart)}" if apart
                else "within the trials' range of the common-stream cells in every number")
        span = (f"{min(spread):.2f} at each M_t of 6-8" if f"{min(spread):.2f}" == f"{max(spread):.2f}"
                else f"{min(spread):.2f} to {max(spread):.2f} over M_t 6-8") if spread else ""
        lines.append(f"{scen}, {VARIANT_STYLE[common]['label']}: with its own streams the ratio is "
                     + (f"{span}, " if span else "")
                     + f"{what}; {drops} frame(s) of the own-stream trials used up their attempts.")
    return [*out, "", "What the cells show: " + " ".join(lines), ""]


@draws("investigation_streams", title=lambda ref, stem: SECTION)
def fig_streams(run: Run) -> list[Path]:
    """Per setup, the down/up ratio at M_t 6-8 from the common streams and from a stream per cell."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    found = pairs(run)
    if not found:
        return []
    cells = run.index()
    fig, axes = plt.subplots(1, len(found), figsize=(5.5 * len(found), 4.0), squeeze=False)
    for ax, (scen, common, own) in zip(axes[0], found, strict=True):
        for v, shift, label in ((common, -0.08, "seed 1 for every M_t (common)"), (own, 0.08, "seed = M_t (own)")):
            pts = [p for p in cells.curve(scen, v, Q, RATIO) if p.mt in MTS]
            st = VARIANT_STYLE[v]
            ax.errorbar([p.mt + shift for p in pts], [p.mean for p in pts],
                        yerr=[[p.mean - p.low for p in pts], [p.high - p.mean for p in pts]],
                        color=st["color"], marker=st["marker"], linestyle="none", capsize=3, label=label)
        low, high = about_one(next(c for c in run.reference["claims"] if c["id"] == "scheduler_balances"))
        ax.axhspan(low, high, color="#2ca02c", alpha=0.08, label=f"about 1:1 ({low:.3f}-{high:.3f})")
        ax.set(xticks=list(MTS), xlabel="M_t (MAC transmission attempts)", ylabel="goodput ratio down/up",
               title=f"{scen}, {VARIANT_STYLE[common]['label']}, Q = {Q}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("Beyond the paper: M_t 6-8, common random streams against a stream per cell", fontsize=10)
    run.caption(fig, "investigation_streams.fig_streams",
                ", ".join(f"{s}-{{{c},{o}}}-q{Q}-mt{{6,7,8}}" for s, c, o in found))
    return run.save(fig, "investigation_streams")
