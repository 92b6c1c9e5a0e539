"""Beyond the report: throughput of both algorithms over random loss (at 0 ms) and over one-way
delay (at 0 % loss), with the point where Westwood+ overtakes CUBIC marked. Points are the cells'
trimmed means; whiskers span the smallest and largest trial."""
from __future__ import annotations

from pathlib import Path

from analysis import westwood as ww
from figures.westwood.common import CCS, Run, style


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    cells = run.cells_by_cc()
    specs = run.reference["sweeps"]
    drawn = {name: ww.sweep(cells, spec) for name, spec in specs.items()}
    drawn = {k: v for k, v in drawn.items() if any(p.mean[cc] is not None for p in v for cc in CCS)}
    if not drawn:
        return []
    fig, axes = plt.subplots(1, len(drawn), figsize=(5.5 * len(drawn), 3.8), squeeze=False)
    for ax, (name, points) in zip(axes[0], drawn.items(), strict=True):
        spec = specs[name]
        for cc in CCS:
            pts = [p for p in points if p.mean[cc] is not None]
            aggs = [cells.by_key[(cc, p.cond)]["metrics"][ww.GOODPUT] for p in pts]
            st = style(cc)
            ax.errorbar([p.x for p in pts], [a["mean"] for a in aggs],
                        yerr=[[a["mean"] - a["min"] for a in aggs], [a["max"] - a["mean"] for a in aggs]],
                        color=st["color"], marker=st["marker"], capsize=3, label=st["label"])
        for c in ww.crossovers(points):
            ax.axvline(c["at"], color="grey", ls=":", lw=1)
            ax.annotate(f"{ww.LABEL[c['to']]} ahead\nfrom ~{c['at']:.2g}", (c["at"], ax.get_ylim()[1]),
                        fontsize=7, va="top", ha="left", xytext=(3, -3), textcoords="offset points")
        ax.set(xlabel=f"{spec['axis'].removesuffix('_pct').removesuffix('_ms')} ({spec['unit']})",
               ylabel="throughput (kbit/s)", title=f"10 Mbit/s, 50-packet queue: {name} sweep")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return run.save(fig, "sweeps")
