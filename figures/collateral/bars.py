"""Grouped bars of one cell metric: x = number of TCP flows, one bar per algorithm, one panel per
RTT; the bar is the trimmed mean, the whisker spans the smallest and largest trial."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from figures.collateral.common import CCS, FLOWS, RTTS, Run, style


def bars(run: Run, metric: str, ylabel: str, titles: dict[int, str], name: str,
         scale: float = 1.0) -> list[Path]:
    import matplotlib.pyplot as plt

    rtts = [r for r in RTTS if any(run.cell_id(cc, r, n) in run.cells for cc in CCS for n in FLOWS)]
    if not rtts:
        return []
    fig, axes = plt.subplots(1, len(rtts), figsize=(5.5 * len(rtts), 3.6), squeeze=False)
    width = 0.8 / len(CCS)
    for ax, rtt in zip(axes[0], rtts, strict=True):
        x = np.arange(len(FLOWS))
        for i, cc in enumerate(CCS):
            means, lo, hi = [], [], []
            for n in FLOWS:
                agg = run.cells.get(run.cell_id(cc, rtt, n), {}).get("metrics", {}).get(metric)
                m = agg["mean"] * scale if agg else np.nan
                means.append(m)
                # max(0, ...): a mean of equal values can land an ulp outside them
                lo.append(max(0.0, m - agg["min"] * scale) if agg else 0)
                hi.append(max(0.0, agg["max"] * scale - m) if agg else 0)
            st = style(cc)
            ax.bar(x + (i - 1) * width, means, width, yerr=[lo, hi], capsize=2, color=st["color"],
                   label=st["label"])
        ax.set_xticks(x, [str(n) for n in FLOWS])
        ax.set(xlabel="concurrent TCP flows", ylabel=ylabel, title=titles[rtt])
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return run.save(fig, name)
