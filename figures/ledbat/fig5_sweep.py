"""Figure 5: mean sum rate (all flows' bytes over first start to last completion) against the
transfer size, per number of flows, linear decrease against MDvar; markers are the cells'
trimmed means, bars the trials' range."""
from __future__ import annotations

from pathlib import Path

from analysis import ledbat as lb
from figures.ledbat.common import Run, style

LINESTYLES = {2: "-", 3: "--", 4: "-.", 5: ":"}


def points(run: Run, cc: str, n: int) -> list[tuple[float, float, float, float]]:
    """(size MB, mean, min, max) of the measured sweep cells of one variant and flow count."""
    spec = run.reference["sweep"]
    out = []
    for cell_id, p in run.params.items():
        if p["cc"] != cc or int(p["n"]) != n or int(p["n_cross"]) or int(p["delay_ms"]) != int(spec["delay_ms"]):
            continue
        agg = (run.cells.get(cell_id) or {}).get("metrics", {}).get("sum_rate_mbit_s")
        if agg:
            out.append((int(p["bytes"]) / 1e6, agg["mean"], agg["min"], agg["max"]))
    return sorted(out)


def main(run: Run) -> list[Path]:
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
    ax.axhline(ceiling, color="grey", ls="--", lw=0.8, label=f"goodput ceiling of 10 Mbit/s ({ceiling:.2f})")
    ax.set_xscale("log")
    # Ticks at the measured sizes, in plain MB: the log axis' default labels read "3 x 10^1".
    ax.set_xticks(sorted(sizes), labels=[f"{s:g}" for s in sorted(sizes)])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="transfer size per flow (MB)", ylabel="mean sum rate (Mbit/s)", title=f"Fig. 5: {spec['title']}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    return run.save(fig, "fig5_sum_rate")
