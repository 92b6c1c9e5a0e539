"""Westwood+ against CUBIC: the report's Figure 1 listing, the cwnd/ssthresh traces of Figures 5-10,
Figure 11's mismatch and the sweeps beyond the report, each a function of the loaded run that returns
the files it wrote."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analysis.parsers import read_qdisc
from analysis.westwood import claims as ww
from analysis.westwood import metrics as wm
from analysis.westwood.metrics import tcpprobe_listing
from analysis.westwood.run import CCS, TESTS, Run, series, style

# Figure 1 analogue: the first lines of one trial's tcp:tcp_probe records in the column layout of
# the tcp_probe module the report used, as text and as a figure.
HEADER = "# time src:port dst:port length snd_nxt snd_una snd_cwnd ssthresh snd_wnd srtt(us)"


def fig1_probe_listing(run: Run) -> list[Path]:
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


# Figures 5-10: cwnd and ssthresh against time, CUBIC and Westwood+, for each of the report's
# three tests: the trial nearest its cell's median throughput, named in the title.
#
# ssthresh is what tcp_probe prints, as in the report (its 2.6.32 module printed the same
# tcp_current_ssthresh()): outside loss recovery that is max(ssthresh, 3/4 cwnd). It is not drawn
# before the first loss, when the kernel holds it "infinite".
def figure_number(run: Run, cond: str, cc: str) -> int:
    return int(run.reference["tests"][cond]["figures"][cc])


def fig5_10_cwnd(run: Run) -> list[Path]:
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


# Figure 11 (the report's appendix A.1): a shaper whose queue does not match the window. The
# mismatch cell's queue (config/westwood.yaml) holds more packets than any window the end hosts'
# socket buffers allow, so it never overflows: cwnd grows with no congestion event, and the queue
# (and with it the RTT) grows along. Drawn: the Westwood+ trial nearest the cell's median, with the
# bottleneck queue on a second axis.
def fig11_mismatch(run: Run) -> list[Path]:
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


# Beyond the report: throughput of both algorithms over random loss (at 0 ms) and over one-way
# delay (at 0 % loss), with the point where Westwood+ overtakes CUBIC marked. Points are the cells'
# trimmed means; whiskers span the smallest and largest trial.
def sweeps(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    cells = run.cells_by_cc()
    specs = run.reference["sweeps"]
    drawn = {name: wm.sweep(cells, spec) for name, spec in specs.items()}
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
        for c in wm.crossovers(points):
            ax.axvline(c["at"], color="grey", ls=":", lw=1)
            ax.annotate(f"{ww.LABEL[c['to']]} ahead\nfrom ~{c['at']:.2g}", (c["at"], ax.get_ylim()[1]),
                        fontsize=7, va="top", ha="left", xytext=(3, -3), textcoords="offset points")
        ax.set(xlabel=f"{spec['axis'].removesuffix('_pct').removesuffix('_ms')} ({spec['unit']})",
               ylabel="throughput (kbit/s)", title=f"10 Mbit/s, 50-packet queue: {name} sweep")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return run.save(fig, "sweeps")
