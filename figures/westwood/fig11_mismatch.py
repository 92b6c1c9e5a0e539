"""Figure 11 (the report's appendix A.1): a shaper whose queue does not match the window. The
mismatch cell's queue (config/westwood.yaml) holds more packets than any window the end hosts'
socket buffers allow, so it never overflows: cwnd grows with no congestion event, and the queue
(and with it the RTT) grows along. Drawn: the Westwood+ trial nearest the cell's median, with the
bottleneck queue on a second axis."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analysis.parsers import read_qdisc
from figures.westwood.common import Run, series, style


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    spec = run.reference["mismatch"]
    cc, cond = spec["cc"], spec["condition"]
    trial = run.median_trial(cc, cond)
    if trial is None:
        return []
    s = series(trial)
    queue_pkts = run.params[f"{cc}-{cond}"]["queue_pkts"]
    prov = json.loads((trial / "provenance.json").read_text())
    q = read_qdisc(trial / "qdisc.csv")
    q = q[q["role"] == "forward"]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    ax.step(s.t, s.cwnd, where="post", color=style(cc)["color"], lw=0.9, label="cwnd")
    if np.isfinite(s.ssthresh).any():
        ax.step(s.t, s.ssthresh, where="post", color="black", lw=0.8, ls="--", label="ssthresh")
    ax.set(xlabel="time since the flow started (s)", ylabel="packets",
           title=f"Fig. {spec['figure']}: {style(cc)['label']} through a {queue_pkts}-packet shaper queue, "
                 f"10 Mbit/s\n({trial.parent.name}/{trial.name}): no congestion event")
    ax2 = ax.twinx()
    ax2.plot(q["t"] - float(prov["t0_monotonic"]), q["backlog_pkts"], color="#7f7f7f", lw=0.8,
             label="bottleneck queue")
    ax2.set_ylabel("queue (packets)")
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax2.legend(fontsize=8, loc="lower right")
    return run.save(fig, f"fig{spec['figure']}_mismatch")
