"""Collateral Damage's figures: Figures 1-5 and Tables 1-2 against the paper, each a function of the
loaded run that returns the files it wrote."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.collateral.owd_bands import pooled_owd
from analysis.collateral.run import CCS, FLOWS, RTTS, Run, style
from analysis.collateral.tables import tables
from analysis.epochs import congestion_events
from analysis.metrics import probe_for_flow
from analysis.parsers import read_qdisc, read_tcp_probe, read_voip
from analysis.report.captions import draws
from analysis.report.paper_run import bulk_tool, claims_of


# Grouped bars of one cell metric: x = number of TCP flows, one bar per algorithm, one panel per
# RTT; the bar is the trimmed mean, the whisker spans the smallest and largest trial.
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


PANELS = [("table1", "mean", "Table 1: goodput (KB/s)"), ("table2", "median", "Table 2: median OWD (ms)"),
          ("table2", "mean", "Table 2: mean OWD (ms)")]


@draws("tables_vs_paper")
def tables_vs_paper(run: Run) -> list[Path]:
    """Tables 1 and 2 at a glance: every measured cell against the paper's value (the dashed
    diagonal is agreement), one panel per table column that carries a mean; colour and marker the
    algorithm, filled 50 ms and hollow 100 ms RTT, size the number of flows."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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


def first_trial(run: Run) -> Path | None:
    """A valid trial to draw the testbed from: of the paper's own cells first (one beyond the paper
    may change the queue or an algorithm's parameters)."""
    def beyond(cell_id: str) -> bool:
        cell = run.cfg.cells_by_id.get(cell_id)
        return cell is None or cell.params.get("variant") not in CCS
    for cell_id in sorted(run.cells, key=lambda c: (beyond(c), c)):
        for d in run.valid_trials(cell_id):
            if (d / "provenance.json").exists():
                return d
    return None


def _queue_text(tree: dict[str, Any]) -> str:
    rate = next((p for p in tree.get("classes", "").split(" rate ")[1:2]), "?").split()[0]
    leaf = next((q for q in tree["qdiscs"] if q["kind"] in ("bfifo", "pfifo")), None)
    limit = leaf["options"].get("limit") if leaf else "?"
    unit = "B" if leaf and leaf["kind"] == "bfifo" else "pkts"
    return f"{tree['dev']}: htb {rate}\n{leaf['kind'] if leaf else '?'} {limit} {unit} (+1 in transmission)"


def _delay_text(tree: dict[str, Any] | None) -> str:
    if not tree:
        return "no delay stage"
    netem = next((q for q in tree["qdiscs"] if q["kind"] == "netem"), None)
    delay = netem["options"]["delay"]["delay"] * 1000 if netem else 0
    return f"netem {delay:.2f} ms on each host port ({tree['dev']}, ...)"


@draws("fig1_testbed")
def fig1_testbed(run: Run) -> list[Path]:
    """Figure 1: the testbed, drawn from what a trial actually ran: its spec (hosts, flows) and its
    provenance (the qdisc trees as read back from the kernel, calibrated delays, kernel, algorithm)."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    d = first_trial(run)
    if d is None:
        return []
    spec = json.loads((d / "spec.json").read_text())
    prov = json.loads((d / "provenance.json").read_text())
    q = prov["qdiscs"]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set(xlim=(0, 10), ylim=(0, 4.6))
    ax.axis("off")

    def box(x: float, y: float, text: str, color: str = "#e8eef7") -> None:
        ax.add_patch(FancyBboxPatch((x - 0.6, y - 0.3), 1.2, 0.6, boxstyle="round,pad=0.05", fc=color, ec="k"))
        ax.text(x, y, text, ha="center", va="center", fontsize=8)

    bulk = [f for f in spec["flows"] if f["kind"] == "bulk"]
    voip = [f for f in spec["flows"] if f["kind"] == "voip"]
    ccs = sorted({f["cc"] for f in bulk})
    box(0.8, 3.4, f"A (s0)\n{len(bulk)} x {bulk_tool(d, [f['id'] for f in bulk])}\n{', '.join(ccs)}")
    box(0.8, 1.2, f"B (s1)\nUDP {voip[0]['packet_bytes']} B\nevery {voip[0]['interval_ms']} ms" if voip else "B (s1)")
    box(2.7, 2.3, "bl\n(bridge)", "#f3f3f3")
    box(5.0, 2.3, "router rt", "#fde9d9")
    box(7.3, 2.3, "br\n(bridge)", "#f3f3f3")
    box(9.2, 3.4, "C (r0)\nTCP sink")
    box(9.2, 1.2, "D (r1)\nUDP sink")
    for (x1, y1), (x2, y2) in [((1.4, 3.4), (2.1, 2.4)), ((1.4, 1.2), (2.1, 2.2)), ((3.3, 2.3), (4.4, 2.3)),
                               ((5.6, 2.3), (6.7, 2.3)), ((7.9, 2.4), (8.6, 3.4)), ((7.9, 2.2), (8.6, 1.2))]:
        ax.plot([x1, x2], [y1, y2], color="k", lw=1)
    ax.text(6.15, 2.75, "forward  ->\n" + _queue_text(q["forward/queue"]), ha="center", fontsize=7)
    ax.text(3.85, 1.55, "<-  reverse\n" + _queue_text(q["reverse/queue"]), ha="center", fontsize=7)
    ax.text(8.1, 3.9, "forward delay: " + _delay_text(q.get("forward/delay")), ha="center", fontsize=7)
    ax.text(1.9, 0.35, "reverse delay: " + _delay_text(q.get("reverse/delay")), ha="center", fontsize=7)
    k = prov["kernel"]
    rtt = prov["calibration"]["rounds"][-1]["base_rtt_ms"]
    ax.text(5.0, 4.35, f"Fig. 1: testbed of {d.parent.name}/{d.name}: Linux {k['release']} "
            f"({k['where']}{', ' + k['accel'] if k.get('accel') else ''}), idle RTT {rtt:.2f} ms "
            f"(configured {spec['scenario']['bottleneck']['forward']['delay_ms'] * 2:g} ms)",
            ha="center", fontsize=9)
    return run.save(fig, "fig1_testbed")


# Figure 2: one H-TCP flow at 100 ms RTT over three consecutive congestion epochs, as the paper's:
# (a) cwnd and the bottleneck queue occupancy against time; (b) the UDP flow's one-way delay and the
# same queue against time. Epochs run from one congestion event to the next (analysis/epochs.py);
# the plots show 2 s either side of the three, with the four events that bound them dotted.
EPOCHS = 3
MARGIN_S = 2.0
CWND_COLOR, QUEUE_COLOR, OWD_COLOR = "#2ca02c", "#1f77b4", "#d62728"


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


@dataclass
class EpochSeries:
    """What Figure 2 draws of one trial, times in s since the trial's start: the flow's cwnd, the
    UDP packets' one-way delay and the forward bottleneck queue, over the plotted window."""

    name: str                       # <cell>/<trial>
    algorithm: str                  # the TCP flow's, as labelled: "H-TCP"
    path: str                       # "1 Mbit/s, 100 ms RTT"
    events: np.ndarray              # the congestion events that bound the three epochs
    cwnd: pd.DataFrame              # rel, snd_cwnd
    owd: pd.DataFrame               # rel, owd_ms
    queue: pd.DataFrame             # rel, backlog_bytes


def _window(df: pd.DataFrame, col: str, t0: float, lo: float, hi: float) -> pd.DataFrame:
    rel = df[col] - t0
    return df[(rel >= lo) & (rel <= hi)].assign(rel=rel)


def _path_text(spec: dict[str, Any]) -> str:
    rate = spec["scenario"]["bottleneck"]["forward"]["rate_kbit"] / 1000
    return f"{rate:g} Mbit/s, {spec['params']['rtt_ms']:g} ms RTT"


def epoch_series(d: Path) -> EpochSeries | None:
    """Figure 2's series of trial d, or None when its flow saw fewer than three whole epochs."""
    spec = json.loads((d / "spec.json").read_text())
    prov = json.loads((d / "provenance.json").read_text())
    bulk = next(e for k, e in prov["endpoints"].items() if k.startswith("bulk"))
    probe = probe_for_flow(read_tcp_probe(d / "tcp_probe.trace").frame, bulk["port"])
    t0 = float(prov["t0_monotonic"])
    t = probe["t"].to_numpy() - t0
    events = congestion_events(t, probe["snd_cwnd"].to_numpy())
    span = middle_epochs(events)
    if span is None:
        return None
    lo, hi = span[0] - MARGIN_S, span[1] + MARGIN_S
    voip_id = next(k for k in prov["endpoints"] if k.startswith("voip"))
    voip = read_voip(d / f"voip-{voip_id}.csv", d / f"voip-{voip_id}.json").packets
    q = read_qdisc(d / "qdisc.csv")
    return EpochSeries(f"{d.parent.name}/{d.name}", style(spec["params"]["cc"])["label"], _path_text(spec),
                       events[(events >= span[0]) & (events <= span[1])],
                       _window(probe, "t", t0, lo, hi), _window(voip, "t_send", t0, lo, hi),
                       _window(q[q["role"] == "forward"], "t", t0, lo, hi))


def _queue_axis(ax: Any, s: EpochSeries) -> Any:
    """The forward queue's backlog (KB) on a right-hand axis of ax: bytes, not packets, because the
    queue also holds the UDP flow's 186-byte packets."""
    ax2 = ax.twinx()
    ax2.plot(s.queue["rel"], s.queue["backlog_bytes"] / 1000, color=QUEUE_COLOR, lw=0.8,
             label="bottleneck queue (KB)")
    ax2.set_ylabel("bottleneck queue (KB)", color=QUEUE_COLOR)
    ax.set_zorder(ax2.get_zorder() + 1)         # ax's own series over the queue, which is denser
    ax.patch.set_visible(False)
    return ax2


def _mark_epochs(ax: Any, s: EpochSeries) -> None:
    """Dotted lines at the congestion events: the window shows more than the three epochs."""
    label = f"congestion events bounding the {EPOCHS} epochs"
    for i, t in enumerate(s.events):
        ax.axvline(t, color="grey", lw=0.8, ls=":", label=label if i == 0 else None)


def _legend(ax: Any, ax2: Any) -> None:
    """One legend for the series of both axes, below the plot: inside, the curves fill it."""
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=7,
              frameon=False)


def _where(s: EpochSeries) -> str:
    return f"{s.path} ({s.name}; {MARGIN_S:g} s shown either side)"


@draws("fig2a_cwnd_queue")
def fig2a(run: Run, s: EpochSeries) -> list[Path]:
    """Figure 2a: one H-TCP flow's cwnd and the bottleneck queue's backlog over three consecutive
    congestion epochs at 100 ms RTT, the congestion events dotted, 2 s shown either side."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.step(s.cwnd["rel"], s.cwnd["snd_cwnd"], where="post", color=CWND_COLOR, label=f"{s.algorithm} cwnd (packets)")
    ax.set(xlabel="time since trial start (s)",
           title=f"Fig. 2a: cwnd and queue occupancy, {EPOCHS} {s.algorithm} congestion epochs\n{_where(s)}")
    ax.set_ylabel("cwnd (packets)", color=CWND_COLOR)
    _mark_epochs(ax, s)
    ax2 = _queue_axis(ax, s)
    _legend(ax, ax2)
    ax.grid(alpha=0.3)
    return run.save(fig, "fig2a_cwnd_queue")


@draws("fig2b_owd_queue")
def fig2b(run: Run, s: EpochSeries) -> list[Path]:
    """Figure 2b: the UDP flow's one-way delay and the bottleneck queue's backlog over the same
    three H-TCP congestion epochs as Figure 2a."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(s.owd["rel"], s.owd["owd_ms"], ".", ms=2, color=OWD_COLOR, label="UDP one-way delay (ms)")
    ax.set(xlabel="time since trial start (s)",
           title=f"Fig. 2b: induced one-way delay and queue occupancy, {EPOCHS} {s.algorithm} congestion "
                 f"epochs\n{_where(s)}")
    ax.set_ylabel("one-way delay (ms)", color=OWD_COLOR)
    _mark_epochs(ax, s)
    ax2 = _queue_axis(ax, s)
    _legend(ax, ax2)
    ax.grid(alpha=0.3)
    return run.save(fig, "fig2b_owd_queue")


def fig2_epochs(run: Run) -> list[Path]:
    d = trial_dir(run)
    s = epoch_series(d) if d is not None else None
    if s is None:
        return []
    return fig2a(run, s) + fig2b(run, s)


@draws("fig3_owd_cdf_rtt*", title=lambda ref, stem: f"Fig. 3a-c at {stem.rsplit('rtt', 1)[1]} ms RTT")
def fig3_owd_cdf(run: Run) -> list[Path]:
    """CDF of the UDP flow's one-way delay for NewReno, H-TCP and CUBIC with 1, 2 and 5 TCP flows
    (a, b, c): the paper's Figure 3 is at 50 ms RTT, and at 100 ms it "looked identical". All
    valid trials of a cell are pooled, inside each trial's measurement window; dotted lines mark
    the path's own delay and that plus a full queue (480 ms), shaded bands where the paper reads
    CUBIC's curve."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    written: list[Path] = []
    # The bands over which the paper reads CUBIC's curve (claim cubic_owd_cdf_shape), shaded where it does.
    shape_bands = {(r, f): c["where"]["bands_ms"] for c in claims_of(run.cfg, run.profile)
                   if c["id"] == "cubic_owd_cdf_shape" for r in c["where"]["rtt_ms"] for f in c["where"]["flows"]}
    paper_owd = (run.reference.get("tables") or {}).get("table2", {}).get("values", {})
    for rtt in RTTS:
        if not any(run.cell_id(cc, rtt, n) in run.cells for cc in CCS for n in FLOWS):
            continue
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.6), sharey=True)
        for ax, n, letter in zip(axes, FLOWS, "abc", strict=True):
            for cc in CCS:
                trials = run.valid_trials(run.cell_id(cc, rtt, n))
                if not trials:
                    continue
                owd = pooled_owd(trials)
                if owd.size:
                    st = style(cc)
                    ax.plot(owd, np.arange(1, owd.size + 1) / owd.size, color=st["color"],
                            label=f"{st['label']} ({len(trials)} trials)")
            # The paper prints each curve's median in Table 2: a black-edged diamond at half the packets.
            for cc in CCS:
                if (row := paper_owd.get(run.cell_id(cc, rtt, n))) is not None:
                    ax.plot(row[0], 0.5, marker="D", ms=6, color=style(cc)["color"], mec="k", mew=1.2, ls="")
            if any(run.cell_id(cc, rtt, n) in paper_owd for cc in CCS):
                ax.plot([], [], marker="D", ms=6, color="w", mec="k", mew=1.2, ls="", label="paper: Table 2 median")
            ax.set(title=f"Fig. 3{letter}: {n} TCP flow{'s' if n > 1 else ''}, {rtt} ms RTT",
                   xlabel="UDP one-way delay (ms)", xlim=(0, rtt / 2 + 500))
            ax.axvline(rtt / 2, color="grey", lw=0.6, ls=":")
            ax.axvline(rtt / 2 + 480, color="grey", lw=0.6, ls=":")
            for name, (low, high) in shape_bands.get((rtt, n), {}).items():
                top = high if high is not None else rtt / 2 + 480
                ax.axvspan(low, top, color="grey", alpha=0.08 if name == "slows" else 0.16, lw=0)
                ax.text((low + top) / 2, 0.03, f"paper: {name}", ha="center", va="bottom", rotation=90,
                        fontsize=6, color="dimgrey")
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(loc="upper left", fontsize=8)
            else:
                ax.text(0.5, 0.5, "not run", transform=ax.transAxes, ha="center", color="grey")
        axes[0].set_ylabel("cumulative fraction of packets")
        written += run.save(fig, f"fig3_owd_cdf_rtt{rtt}")
    return written


@draws("fig4_queue_full_events")
def fig4_queue_full(run: Run) -> list[Path]:
    """Figure 4: average queue-full events per minute, counted in a 60 s window in the middle of each
    trial (an event: the drop-tail queue dropping until it can accept again; analysis/metrics.py);
    bars the trimmed mean, whiskers the smallest and largest trial."""
    return bars(run, "q_forward_full_events_per_min", "queue-full events per minute",
                {50: "Fig. 4: queue-full events, 50 ms RTT", 100: "Fig. 4: queue-full events, 100 ms RTT"},
                "fig4_queue_full_events")


@draws("fig5_retransmissions")
def fig5_retransmissions(run: Run) -> list[Path]:
    """Figure 5a/5b: average aggregate retransmitted packets per trial (tcptrace, summed over the TCP
    flows of a trial, as the paper's footnote 6) at 50 and 100 ms RTT; bars the trimmed mean,
    whiskers the smallest and largest trial."""
    return bars(run, "rexmt_data_pkts", "retransmitted packets per trial",
                {50: "Fig. 5a: retransmissions, 50 ms RTT", 100: "Fig. 5b: retransmissions, 100 ms RTT"},
                "fig5_retransmissions")
