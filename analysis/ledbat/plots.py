"""LEDBAT's figures: the rate and queue time series of Figures 1-4 and 6, and Figure 5's sum rate over
transfer size, each a function of the loaded run that returns the files it wrote."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from analysis.ledbat import metrics as lb
from analysis.ledbat.run import Run, style
from analysis.report.captions import draws
from cc.registry import target_ms

FIGURES = ("fig1", "fig2", "fig3", "fig4", "fig6", "fig6s")
FLOW_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")


def title(reference: dict[str, Any], name: str) -> str:
    """A time-series figure's title: the paper's figure number (fig6s: Figure 6 scaled) and what
    config/ledbat.yaml says it draws."""
    return f"{name.replace('fig', 'Fig. ').rstrip('s')}: {reference['figures'][name]['title']}"


def file_title(reference: dict[str, Any], stem: str) -> str:
    """The title of figure file <name>_<case>: the figure's, and the case it draws."""
    name, _, case = stem.partition("_")
    return f"{title(reference, name)}, case {case}"


def paper_done(ax: Any, run: Run, spec: dict[str, Any], cc: str, case: str) -> None:
    """The completion times section 5.2 prints for this panel (the completion table's values, and
    Fig 2's range for the first flow), in black, so a reader sees where the paper's flows ended."""
    table = run.reference["tables"]["completion"]
    row = table["values"].get(f"{cc}-{case}") or []
    for col, value in zip(table["columns"], row, strict=False):
        if value is not None and col != "last_done":
            flow = col.removeprefix("flow").removesuffix("_done")
            ax.axvline(value, color="black", ls=("--", ":")[int(flow) > 1], lw=1.2,
                       label=f"paper: flow {flow} done {value:g} s")
    if (span := spec.get("first_done_s")) and row:
        ax.axvspan(*span, color="black", alpha=0.12, lw=0,
                   label=f"paper: flow 1 done {span[0]:g}-{span[1]:g} s (any MD scheme)")


@draws("fig[12346]_*", "fig6s_*", title=file_title)
def draw(run: Run, name: str) -> list[Path]:
    """Per-flow rate (1-s bins of acknowledged bytes) and the bottleneck's queueing
    delay against time, one pair of panels per decrease scheme, from the trial nearest its cell's
    median completion of the last flow (named in each panel's title); the dashed line is the
    scheme's TARGET delay."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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
        paper_done(ax, run, spec, cc, case)
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
    fig.suptitle(title(run.reference, name), fontsize=11)
    fig.tight_layout()
    return run.save(fig, f"{name}_{case}")


def timeseries(run: Run) -> list[Path]:
    return [p for name in FIGURES for p in draw(run, name)]


LINESTYLES = {2: "-", 3: "--", 4: "-.", 5: ":"}


def points(run: Run, cc: str, n: int) -> list[tuple[float, float, float, float]]:
    """(size MB, mean, min, max) of the measured sweep cells of one variant and flow count."""
    spec = run.reference["sweep"]
    out = []
    for cell_id, p in run.params.items():
        if (p["cc"] != cc or int(p["n"]) != n or int(p["n_cross"]) or int(p["delay_ms"]) != int(spec["delay_ms"])
                or "twin_of" in p):
            continue
        agg = (run.cells.get(cell_id) or {}).get("metrics", {}).get("sum_rate_mbit_s")
        if agg:
            out.append((int(p["bytes"]) / 1e6, agg["mean"], agg["min"], agg["max"]))
    return sorted(out)


@draws("fig5_sum_rate")
def fig5_sweep(run: Run) -> list[Path]:
    """Figure 5: mean sum rate (all flows' bytes over first start to last completion) against the
    transfer size, per number of flows, linear decrease against MDvar; markers are the cells'
    trimmed means, bars the trials' range, the dashed line the goodput ceiling of the link."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    spec = run.reference["sweep"]
    fig, ax = plt.subplots(figsize=(7, 4))
    drawn, sizes = 0, set[float]()
    for cc in spec["ccs"]:
        for n, ls in LINESTYLES.items():
            pts = points(run, cc, n)
            if not pts:
                continue
            x, y, lo, hi = zip(*pts, strict=True)
            sizes.update(x)
            err = [[m - a for m, a in zip(y, lo, strict=True)], [b - m for m, b in zip(y, hi, strict=True)]]
            ax.errorbar(x, y, yerr=err, color=style(cc)["color"], marker=style(cc)["marker"], ls=ls, capsize=2,
                        label=f"{style(cc)['label']}, {n} flows")
            drawn += 1
    if not drawn:
        plt.close(fig)
        return []
    ceiling = 10.0 * lb.GOODPUT_CEILING
    ax.axhline(ceiling, color="grey", ls="--", lw=0.8,
               label=f"goodput ceiling of 10 Mbit/s of IP bytes ({ceiling:.2f})")
    ax.set_xscale("log")
    # Ticks at the measured sizes, in plain MB: the log axis' default labels read "3 x 10^1".
    ax.set_xticks(sorted(sizes), labels=[f"{s:g}" for s in sorted(sizes)])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="transfer size per flow (MB)", ylabel="mean sum rate (Mbit/s)", title=f"Fig. 5: {spec['title']}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.16))   # below: never over the data
    return run.save(fig, "fig5_sum_rate")
