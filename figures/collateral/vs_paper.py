"""Tables 1 and 2 at a glance: every measured cell against the paper's value (the diagonal is
agreement), one panel per table column that carries a mean."""
from __future__ import annotations

from pathlib import Path

from figures.collateral.common import Run, style
from figures.collateral.tables import tables

PANELS = [("table1", "mean", "Table 1: goodput (KB/s)"), ("table2", "median", "Table 2: median OWD (ms)"),
          ("table2", "mean", "Table 2: mean OWD (ms)")]


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    tabs = tables(run)
    if not any(r.measured[c] is not None for tid, c, _ in PANELS for r in tabs[tid].rows):
        return []
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.2 * len(PANELS), 4))
    for ax, (tid, col, title) in zip(axes, PANELS, strict=True):
        pts = [(paper, measured, r.params) for r in tabs[tid].rows
               if (paper := r.paper[col]) is not None and (measured := r.measured[col]) is not None]
        for paper, measured, p in pts:
            st = style(p["cc"])
            ax.scatter(paper, measured, color=st["color"], marker=st["marker"], s=18 + 8 * p["flows"],
                       facecolors="none" if p["rtt_ms"] == 100 else st["color"])
        lo = min(min(a, b) for a, b, _ in pts)
        hi = max(max(a, b) for a, b, _ in pts)
        pad = (hi - lo) * 0.1 + 0.5
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], color="grey", lw=0.8, ls="--")
        ax.set(title=title, xlabel="paper", ylabel="measured", xlim=(lo - pad, hi + pad), ylim=(lo - pad, hi + pad))
        ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], color=style(cc)["color"], marker=style(cc)["marker"], ls="", label=style(cc)["label"])
               for cc in ("newreno", "htcp", "cubic")]
    axes[0].legend(handles=handles, fontsize=8, title="filled: 50 ms, hollow: 100 ms;\nsize: flows", title_fontsize=7)
    return run.save(fig, "tables_vs_paper")
