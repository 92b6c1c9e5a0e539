"""Figure 3: CDF of the UDP flow's one-way delay for NewReno, H-TCP and CUBIC with 1, 2 and 5 TCP
flows (a, b, c) at 50 ms RTT, and the same set at 100 ms (the paper: "looked identical").
All valid trials of a cell are pooled, inside each trial's measurement window."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analysis.parsers import read_voip
from analysis.summarize import measurement_window, voip_in_window
from figures.collateral.common import CCS, FLOWS, RTTS, Run, style


def owd_samples(trial: Path) -> np.ndarray:
    spec = json.loads((trial / "spec.json").read_text())
    prov = json.loads((trial / "provenance.json").read_text())
    window = measurement_window(spec, prov)
    out = []
    for f in (f for f in spec["flows"] if f["kind"] == "voip"):
        log = read_voip(trial / f"voip-{f['id']}.csv", trial / f"voip-{f['id']}.json")
        out.append(voip_in_window(log, window)[0]["owd_ms"].to_numpy())
    return np.concatenate(out) if out else np.array([])


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    written: list[Path] = []
    for rtt in RTTS:
        if not any(run.cell_id(cc, rtt, n) in run.cells for cc in CCS for n in FLOWS):
            continue
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
        for ax, n, letter in zip(axes, FLOWS, "abc", strict=True):
            for cc in CCS:
                trials = run.valid_trials(run.cell_id(cc, rtt, n))
                if not trials:
                    continue
                owd = np.sort(np.concatenate([owd_samples(t) for t in trials]))
                if owd.size:
                    st = style(cc)
                    ax.plot(owd, np.arange(1, owd.size + 1) / owd.size, color=st["color"],
                            label=f"{st['label']} ({len(trials)} trials)")
            ax.set(title=f"Fig. 3{letter}: {n} TCP flow{'s' if n > 1 else ''}, {rtt} ms RTT",
                   xlabel="UDP one-way delay (ms)", xlim=(0, rtt / 2 + 500))
            ax.axvline(rtt / 2, color="grey", lw=0.6, ls=":")
            ax.axvline(rtt / 2 + 480, color="grey", lw=0.6, ls=":")
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="upper left", fontsize=8)
            else:
                ax.text(0.5, 0.5, "not run", transform=ax.transAxes, ha="center", color="grey")
        axes[0].set_ylabel("cumulative fraction of packets")
        written += run.save(fig, f"fig3_owd_cdf_rtt{rtt}")
    return written
