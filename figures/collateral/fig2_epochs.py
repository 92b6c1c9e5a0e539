"""Figure 2: one H-TCP flow at 100 ms RTT over three consecutive congestion epochs.
(a) cwnd against time; (b) the UDP flow's one-way delay and the bottleneck queue against time.
Epochs run from one congestion event to the next (analysis/epochs.py)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.epochs import congestion_events
from analysis.metrics import probe_for_flow
from analysis.parsers import read_qdisc, read_tcp_probe, read_voip
from figures.collateral.common import Run

EPOCHS = 3


def middle_epochs(events: np.ndarray, n: int = EPOCHS) -> tuple[float, float] | None:
    """[start, end] of n consecutive epochs (event to event) around the middle of the trial."""
    if len(events) < n + 1:
        return None
    i = (len(events) - n - 1) // 2        # the central one of the possible first events
    return float(events[i]), float(events[i + n])


def trial_dir(run: Run) -> Path | None:
    """A valid trial of the paper's figure trial cell (config/collateral.yaml figure_trials)."""
    cell = run.cfg.figure_trials[0]
    for d in [*run.valid_trials(cell), run.results / cell / "trial-1"]:
        if (d / "summary.json").exists() and json.loads((d / "summary.json").read_text()).get("valid"):
            return d
    return None


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    d = trial_dir(run)
    if d is None:
        return []
    prov = json.loads((d / "provenance.json").read_text())
    bulk = next(e for k, e in prov["endpoints"].items() if k.startswith("bulk"))
    probe = probe_for_flow(read_tcp_probe(d / "tcp_probe.trace").frame, bulk["port"])
    t0 = float(prov["t0_monotonic"])
    t, cwnd = probe["t"].to_numpy() - t0, probe["snd_cwnd"].to_numpy()
    span = middle_epochs(congestion_events(t, cwnd))
    if span is None:
        return []
    lo, hi = span[0] - 2.0, span[1] + 2.0
    voip_id = next(k for k in prov["endpoints"] if k.startswith("voip"))
    voip = read_voip(d / f"voip-{voip_id}.csv", d / f"voip-{voip_id}.json").packets
    q = read_qdisc(d / "qdisc.csv")
    q = q[q["role"] == "forward"]

    def window(df: pd.DataFrame, col: str) -> pd.DataFrame:
        rel = df[col] - t0
        return df[(rel >= lo) & (rel <= hi)].assign(rel=rel)

    p, v, qq = window(probe, "t"), window(voip, "t_send"), window(q, "t")
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.step(p["rel"], p["snd_cwnd"], where="post", color="#2ca02c")
    ax.set(xlabel="time since trial start (s)", ylabel="cwnd (packets)",
           title=f"Fig. 2a: H-TCP cwnd, 1 Mbit/s, 100 ms RTT ({d.parent.name}/{d.name})")
    ax.grid(alpha=0.3)
    out = run.save(fig, "fig2a_cwnd")
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(v["rel"], v["owd_ms"], ".", ms=2, color="#d62728", label="UDP one-way delay (ms)")
    ax.set(xlabel="time since trial start (s)", ylabel="one-way delay (ms)",
           title="Fig. 2b: induced one-way delay and queue occupancy")
    ax2 = ax.twinx()
    ax2.plot(qq["rel"], qq["backlog_bytes"] / 1000, color="#1f77b4", lw=0.8, label="queue (KB)")
    ax2.set_ylabel("bottleneck queue (KB)")
    ax.legend(loc="lower left", fontsize=8)
    ax2.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    return out + run.save(fig, "fig2b_owd_queue")
