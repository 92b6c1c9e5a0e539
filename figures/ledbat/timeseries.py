"""Figures 1-4 and 6: per-flow rate (1-s bins of acknowledged bytes) and the bottleneck's queueing
delay against time, one pair of panels per decrease scheme, from the trial nearest its cell's
median completion of the last flow (named in each panel's title)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis import ledbat as lb
from cc.registry import target_ms
from figures.ledbat.common import Run, style

FIGURES = ("fig1", "fig2", "fig3", "fig4", "fig6", "fig6s")
FLOW_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")


def draw(run: Run, name: str) -> list[Path]:
    import matplotlib.pyplot as plt

    spec = run.reference["figures"][name]
    case = run.figure_case(spec)
    if case is None:
        return []
    ccs = [cc for cc in spec["ccs"] if run.median_trial(cc, case) is not None]
    fig, axes = plt.subplots(2 * len(ccs), 1, figsize=(8, 3.6 * len(ccs)), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [2, 1] * len(ccs)})
    for i, cc in enumerate(ccs):
        trial = run.median_trial(cc, case)
        assert trial is not None
        s = lb.load_series(trial)
        ax, axq = axes[2 * i, 0], axes[2 * i + 1, 0]
        for j, f in enumerate(s.flows):
            t = np.arange(len(f.rate_mbit)) * lb.BIN_S
            # the cross-traffic TCP flow in black: the registry's NewReno blue is LEDBAT flow 1's here
            colour = FLOW_COLOURS[j % len(FLOW_COLOURS)] if f.cc.startswith("ledbat") else "black"
            label = f"flow {j + 1}" if f.cc.startswith("ledbat") else style(f.cc)["label"]
            done = f" (done {f.done_s:.0f} s)" if f.done_s is not None else ""
            ax.step(t, f.rate_mbit, where="post", color=colour, lw=0.9, label=label + done)
        ax.set_ylabel("rate (Mbit/s)")
        ax.set_ylim(0, s.rate_kbit / 1000 * 1.05)
        ax.set_title(f"{style(cc)['label']}, {case} ({trial.parent.name}/{trial.name})", fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))     # outside: never over the data
        ax.grid(alpha=0.3)
        axq.plot(s.queue_t, s.queue_ms, color="black", lw=0.4)
        axq.axhline(target_ms(cc), color="grey", ls="--", lw=0.8, label="TARGET")
        axq.set_ylabel("queueing\ndelay (ms)")
        axq.set_ylim(bottom=0)
        axq.grid(alpha=0.3)
        axq.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[-1, 0].set_xlabel("time since the first flow started (s)")
    axes[-1, 0].set_xlim(left=0)
    fig.suptitle(f"{name.replace('fig', 'Fig. ').rstrip('s')}: {spec['title']}", fontsize=11)
    fig.tight_layout()
    return run.save(fig, f"{name}_{case}")


def main(run: Run) -> list[Path]:
    return [p for name in FIGURES for p in draw(run, name)]
