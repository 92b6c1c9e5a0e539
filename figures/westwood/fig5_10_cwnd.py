"""Figures 5-10: cwnd and ssthresh against time, CUBIC and Westwood+, for each of the report's
three tests: the trial nearest its cell's median throughput, named in the title.

ssthresh is what tcp_probe prints, as in the report (its 2.6.32 module printed the same
tcp_current_ssthresh()): outside loss recovery that is max(ssthresh, 3/4 cwnd). It is not drawn
before the first loss, when the kernel holds it "infinite"."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from figures.westwood.common import CCS, TESTS, Run, series, style


def figure_number(run: Run, cond: str, cc: str) -> int:
    return int(run.reference["tests"][cond]["figures"][cc])


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    written: list[Path] = []
    for cond in TESTS:
        for cc in CCS:
            trial = run.median_trial(cc, cond)
            if trial is None:
                continue
            s = series(trial)
            n = figure_number(run, cond, cc)
            fig, ax = plt.subplots(figsize=(7, 3.4))
            ax.step(s.t, s.cwnd, where="post", color=style(cc)["color"], lw=0.8, label="cwnd")
            if np.isfinite(s.ssthresh).any():
                ax.step(s.t, s.ssthresh, where="post", color="black", lw=0.8, ls="--", label="ssthresh")
            test = run.reference["tests"][cond]["title"]
            ax.set(xlabel="time since the flow started (s)", ylabel="packets",
                   title=f"Fig. {n}: {test}, {style(cc)['label']}\n({trial.parent.name}/{trial.name}, "
                         f"the trial nearest the cell's median throughput)")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="lower right")
            written += run.save(fig, f"fig{n:02d}_{cond}_{cc}")
    return written
