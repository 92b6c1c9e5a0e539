"""Beyond the paper: why the first reference's H-TCP induced as much delay as CUBIC.

That reference ran Linux's H-TCP as the kernel ships it, with the adaptive backoff on: at each
congestion event cwnd falls to beta x cwnd with beta = min RTT / max RTT, bounded to [0.5, 0.8]
(tcp_htcp.c). The paper ran it off (beta 0.5 at every backoff, section 3). The cells
`htcp-adaptive-*` run it on beside the paper's `htcp-*`; this module draws both against NewReno,
CUBIC and the paper's Table 2, with the depth of each backoff read from the senders' cwnd traces
(the mechanism: a shallower backoff leaves the 480-ms queue fuller).
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from analysis.collateral.run import FLOWS, RTTS, Run, style
from analysis.epochs import backoff_depths
from analysis.metrics import probe_for_flow
from analysis.parsers import read_tcp_probe
from analysis.report.captions import draws

ADAPTIVE = "htcp-adaptive"
SERIES = (("newreno", None), ("htcp", None), (ADAPTIVE, "H-TCP, adaptive backoff on (Linux's default)"),
          ("cubic", None))


@functools.cache
def trial_depths(trial: Path) -> tuple[float, ...]:
    """The backoff depth of each congestion event of each bulk flow of the trial (analysis/epochs.py).
    Read once per process: the figure, the table and the finding of verdict.md all use it."""
    prov = json.loads((trial / "provenance.json").read_text())
    frame = read_tcp_probe(trial / "tcp_probe.trace").frame
    out: list[float] = []
    for name, endpoint in sorted(prov["endpoints"].items()):
        if name.startswith("bulk"):
            probe = probe_for_flow(frame, endpoint["port"])
            out += backoff_depths(probe["t"].to_numpy(), probe["snd_cwnd"].to_numpy())
    return tuple(out)


def cell_depth(run: Run, cell_id: str) -> tuple[float, float, float] | None:
    """(median, 25th, 75th percentile) of the backoff depths over the cell's valid trials."""
    depths = [d for trial in run.valid_trials(cell_id) for d in trial_depths(trial)]
    if not depths:
        return None
    q25, q50, q75 = np.percentile(depths, [25, 50, 75])
    return float(q50), float(q25), float(q75)


def _label(variant: str, label: str | None) -> str:
    return label or style(variant)["label"] + (", the paper's setting" if variant == "htcp" else "")


@draws("investigation_htcp_backoff")
def fig_htcp_backoff(run: Run) -> list[Path]:
    """Median OWD per flow count for the paper's three algorithms and H-TCP with the adaptive
    backoff on (top, the paper's Table 2 H-TCP as black marks), and each H-TCP setting's backoff
    depth (bottom): one column per RTT. Drawn when an htcp-adaptive cell was run."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    rtts = [r for r in RTTS if any(f"{ADAPTIVE}-rtt{r}-f{n}" in run.cells for n in FLOWS)]
    if not rtts:
        return []
    paper = (run.reference.get("tables") or {}).get("table2", {}).get("values", {})
    fig, axes = plt.subplots(2, len(rtts), figsize=(5.8 * len(rtts), 7.2), squeeze=False, sharex=True)
    x = np.arange(len(FLOWS))
    for col, rtt in enumerate(rtts):
        top, bottom = axes[0][col], axes[1][col]
        width = 0.8 / len(SERIES)
        for i, (variant, label) in enumerate(SERIES):
            st = style("htcp" if variant == ADAPTIVE else variant)
            hatch = "//" if variant == ADAPTIVE else None
            aggs = [run.cells.get(f"{variant}-rtt{rtt}-f{n}", {}).get("metrics", {}).get("owd_median_ms")
                    for n in FLOWS]
            means = [a["mean"] if a else np.nan for a in aggs]
            err = [[max(0.0, a["mean"] - a["min"]) if a else 0 for a in aggs],
                   [max(0.0, a["max"] - a["mean"]) if a else 0 for a in aggs]]
            top.bar(x + (i - 1.5) * width, means, width, yerr=err, capsize=2, color=st["color"],
                    hatch=hatch, edgecolor="white" if hatch else None, label=_label(variant, label))
        marks = [(paper.get(f"htcp-rtt{rtt}-f{n}") or [np.nan])[0] for n in FLOWS]
        top.plot(x - 0.5 * width, marks, "k_", markersize=14, mew=2, label="paper's H-TCP (Table 2)")
        top.set(ylabel="median one-way delay of the UDP flow (ms)", ylim=(300, 570),
                title=f"{rtt} ms RTT: median OWD (trimmed mean; whiskers: trial range)")
        top.grid(axis="y", alpha=0.3)
        top.legend(fontsize=7, loc="upper left", ncol=2)
        for j, variant in enumerate(("htcp", ADAPTIVE)):
            q = [cell_depth(run, f"{variant}-rtt{rtt}-f{n}") for n in FLOWS]
            med = [v[0] if v else np.nan for v in q]
            err = [[v[0] - v[1] if v else 0 for v in q], [v[2] - v[0] if v else 0 for v in q]]
            bottom.errorbar(x + (j - 0.5) * 0.2, med, yerr=err, fmt="o" if j == 0 else "s", capsize=3,
                            color=style("htcp")["color"], mfc="white" if j else None,
                            label=_label(variant, dict(SERIES)[variant]))
        bottom.axhline(0.5, color="grey", lw=0.8, ls="--")
        bottom.set(xlabel="concurrent TCP flows", ylabel="cwnd after / before a congestion event",
                   ylim=(0.3, 0.9), title=f"{rtt} ms RTT: backoff depth (median, quartiles over events)")
        bottom.set_xticks(x, [str(n) for n in FLOWS])
        bottom.grid(axis="y", alpha=0.3)
        bottom.legend(fontsize=7)
    fig.suptitle("Beyond the paper: H-TCP's adaptive backoff and the delay it induces")
    fig.tight_layout()
    return run.save(fig, "investigation_htcp_backoff")


def section(run: Run, verdict: str | None) -> list[str]:
    """verdict.md's account of the investigation: per condition the four median OWDs beside the
    paper's H-TCP, the two settings' backoff depths, and what the claim beyond the paper found."""
    conds = [(r, n) for r in RTTS for n in FLOWS if f"{ADAPTIVE}-rtt{r}-f{n}" in run.cells]
    if not conds:
        return []
    paper = (run.reference.get("tables") or {}).get("table2", {}).get("values", {})

    def med(variant: str, rtt: int, n: int) -> str:
        agg = run.cells.get(f"{variant}-rtt{rtt}-f{n}", {}).get("metrics", {}).get("owd_median_ms")
        return f"{agg['mean']:.1f}" if agg else "-"

    def depth(variant: str, rtt: int, n: int) -> str:
        d = cell_depth(run, f"{variant}-rtt{rtt}-f{n}")
        return f"{d[0]:.2f} ({d[1]:.2f}-{d[2]:.2f})" if d else "-"

    out = ["## Beyond the paper: H-TCP's adaptive backoff", "",
           "The first (TCG VM) reference ran H-TCP with Linux's default adaptive backoff on and found it "
           "as delaying as CUBIC and more than NewReno with two flows, against the paper's Table 2; the "
           "paper ran it off (section 3). The `htcp-adaptive-*` cells run it on, all else equal. "
           f"Verdict of the claim beyond the paper (htcp_adaptive_backoff): **{verdict or 'not evaluated'}**. "
           "Figure: investigation_htcp_backoff. Median OWD in ms (trimmed mean); backoff depth: cwnd "
           "after over before each congestion event, median (quartiles) over every event of every flow "
           "of the valid trials.", ""]
    out += [*_finding(run, conds), ""]
    out += ["| RTT | flows | NewReno | H-TCP (paper's setting) | H-TCP (adaptive backoff) | CUBIC | paper's H-TCP "
            "| backoff depth, paper's setting | backoff depth, adaptive |",
            "|---|---|---|---|---|---|---|---|---|"]
    for rtt, n in conds:
        p = (paper.get(f"htcp-rtt{rtt}-f{n}") or [None])[0]
        out.append(f"| {rtt} ms | {n} | {med('newreno', rtt, n)} | {med('htcp', rtt, n)} | {med(ADAPTIVE, rtt, n)} "
                   f"| {med('cubic', rtt, n)} | {'-' if p is None else f'{p:.1f}'} | {depth('htcp', rtt, n)} "
                   f"| {depth(ADAPTIVE, rtt, n)} |")
    return [*out, ""]


def _finding(run: Run, conds: list[tuple[int, int]]) -> list[str]:
    """What the cells show, in numbers: the two settings' backoff depths and what the adaptive one
    does to the median OWD against the paper's setting and against CUBIC."""
    def owd(variant: str, rtt: int, n: int) -> float | None:
        agg = run.cells.get(f"{variant}-rtt{rtt}-f{n}", {}).get("metrics", {}).get("owd_median_ms")
        return agg["mean"] if agg else None

    depth = {v: [d[0] for r, n in conds if (d := cell_depth(run, f"{v}-rtt{r}-f{n}"))] for v in ("htcp", ADAPTIVE)}
    rise = [a - b for r, n in conds if (a := owd(ADAPTIVE, r, n)) is not None and (b := owd("htcp", r, n)) is not None]
    over_cubic = sum(1 for r, n in conds if (a := owd(ADAPTIVE, r, n)) is not None
                     and (c := owd("cubic", r, n)) is not None and a > c)
    if not (depth["htcp"] and depth[ADAPTIVE] and rise):
        return []
    return [f"What the cells show: with the adaptive backoff on, H-TCP's median backoff depth was "
            f"{min(depth[ADAPTIVE]):.2f}-{max(depth[ADAPTIVE]):.2f} (nearest its bound 0.8 with one flow) "
            f"against {min(depth['htcp']):.2f}-{max(depth['htcp']):.2f} with the paper's setting; its median OWD "
            f"rose by {min(rise):.1f}-{max(rise):.1f} ms and lay above CUBIC's at {over_cubic} of {len(conds)} "
            "conditions. The first reference's H-TCP ran this setting; the paper's setting is what the paper's "
            "own H-TCP claims above (htcp_below_newreno_1_2, htcp_newreno_like) are judged on."]
