"""Figure 1 analogue: the first lines of one trial's tcp:tcp_probe records in the column layout of
the tcp_probe module the report used, as text and as a figure."""
from __future__ import annotations

from pathlib import Path

from analysis.westwood import tcpprobe_listing
from figures.westwood.common import Run, series

HEADER = "# time src:port dst:port length snd_nxt snd_una snd_cwnd ssthresh snd_wnd srtt(us)"


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    trial = run.median_trial("westwood", "t1") or run.median_trial("cubic", "t1")
    if trial is None:
        trial = next((t for cid in sorted(run.cells) for t in run.valid_trials(cid)), None)
    if trial is None:
        return []
    s = series(trial)
    start = len(s.probe) // 2          # mid-trial, where cwnd and ssthresh are both set
    lines = [HEADER, *tcpprobe_listing(s.probe.iloc[start:], rows=12)]
    text = run.out / "fig01_tcpprobe.txt"
    text.write_text(f"# {trial.parent.name}/{trial.name}, tcp:tcp_probe, times relative to the first line\n"
                    + "\n".join(lines) + "\n")
    fig = plt.figure(figsize=(10, 0.25 * len(lines) + 0.6))
    fig.text(0.01, 0.98, "\n".join(lines), family="monospace", fontsize=7, va="top")
    fig.suptitle(f"Fig. 1: our probe output in the report's tcpprobe layout ({trial.parent.name}/{trial.name})",
                 fontsize=9, y=1.02)
    return [text, *run.save(fig, "fig01_tcpprobe")]
