"""Beyond the paper: what CUBIC's OWD step at 400 ms needs (claim cubic_owd_cdf_shape).

Our CUBIC's CDF (one flow, 50 ms) leaves zero about 40 ms before the paper's step, and Table 2's
CUBIC delays are 25-30 ms above ours where NewReno's and H-TCP's are within 12. Where the CDF
leaves zero is the queue CUBIC leaves after a loss; where it is steep, the window CUBIC lingers at
(its plateau near W_max). The cells `cubic-beta08`, `cubic-nofc` and `cubic-dnqueue` change one
thing each (config/collateral.yaml, extra_matrices): the window kept at a loss, fast convergence,
and the queue's size as dummynet counts it; `cubic-beta08-dnqueue` the two that move the step.
Each setting is judged by the claim itself, its cells standing in for the paper's CUBIC, and its
delays are set beside Table 2's. NewReno and H-TCP run with dummynet's queue too
(`newreno-dnqueue`, `htcp-dnqueue`): whether the queue explains the offset all three share.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from analysis.collateral import owd_bands
from analysis.collateral.claims import Cells, cubic_owd_cdf_shape
from analysis.collateral.run import FLOWS, Run, style
from analysis.verdicts import Verdict, judge

CLAIM = "cubic_owd_cdf_shape"
RTT = 50
# (cell variant, what it changes); the first is the paper's setting (Linux's CUBIC, 2.6.25's values)
SETTINGS = (("cubic", "Linux's CUBIC: beta 0.7, fast convergence on (the paper's)"),
            ("cubic-beta08", "beta 0.8: 0.8 of the window kept at a loss"),
            ("cubic-nofc", "fast convergence off"),
            ("cubic-dnqueue", "the queue as dummynet counts it (41 full-size packets)"),
            ("cubic-beta08-dnqueue", "beta 0.8 and dummynet's queue"))
LINES = {"cubic": "-", "cubic-beta08": "--", "cubic-nofc": ":", "cubic-dnqueue": "-.", "cubic-beta08-dnqueue": "--"}
COLOURS = {"cubic": style("cubic")["color"], "cubic-beta08": "#ff7f0e", "cubic-nofc": "#7f7f7f",
           "cubic-dnqueue": "#17becf", "cubic-beta08-dnqueue": "#8c564b"}
QUEUE = "dnqueue"           # the variant suffix of the cells with dummynet's queue
ALGORITHMS = ("newreno", "htcp", "cubic")


def _claim(run: Run) -> dict[str, Any] | None:
    return next((c for c in (run.cfg.data.get("reference") or {}).get("claims", []) if c["id"] == CLAIM), None)


def _settings(run: Run) -> list[tuple[str, str]]:
    """The settings with a measured 1-flow cell; none but the paper's: no investigation here."""
    got = [(v, text) for v, text in SETTINGS if f"{v}-rtt{RTT}-f1" in run.cells]
    return got if len(got) > 1 else []


def claim_under(run: Run, variant: str) -> Verdict | None:
    """The claim judged on one setting's cells, as if they were the paper's CUBIC."""
    claim = _claim(run)
    if claim is None:
        return None
    params = {cid: c.params for cid, c in run.cfg.cells_by_id.items()}
    cells = Cells.from_cells(run.cells, params)
    view = Cells({("cubic", r, n): c for (v, r, n), c in cells.by_key.items() if v == variant})
    return judge(claim, cubic_owd_cdf_shape(view, claim)) if view.by_key else None


def _metric(run: Run, cell_id: str, metric: str) -> dict[str, float] | None:
    return run.cells.get(cell_id, {}).get("metrics", {}).get(metric)


def fig_cubic_step(run: Run) -> list[Path]:
    """CUBIC's OWD CDF with one flow under each setting, the paper's step and bands shaded (left),
    and each setting's median OWD per flow count beside Table 2's CUBIC (right)."""
    import matplotlib.pyplot as plt

    settings = _settings(run)
    claim = _claim(run)
    if not settings or claim is None:
        return []
    w = claim["where"]
    step, tol = float(w["step_ms"]), float(claim["bars"]["step_tolerance_ms"]["value"])
    fig, (left, right, offset) = plt.subplots(1, 3, figsize=(18, 4.8), gridspec_kw={"width_ratios": [1.4, 1, 1]})
    left.axvspan(step - tol, step + tol, color="0.85", label=f"the paper's step: {step:g} ± {tol:g} ms")
    for name, (low, _) in w["bands_ms"].items():
        left.axvline(low, color="0.6", lw=0.6)
        left.text(low + 2, 0.02, name, fontsize=7, color="0.4")
    drawn = False
    for variant, text in settings:
        owd = owd_bands.pooled_owd(run.valid_trials(f"{variant}-rtt{RTT}-f1"))
        if owd.size:
            left.plot(owd, np.arange(1, owd.size + 1) / owd.size, LINES[variant], color=COLOURS[variant],
                      lw=1.4, label=text)
            drawn = True
    if not drawn:
        plt.close(fig)
        return []
    left.set(xlim=(300, 520), ylim=(0, 1), xlabel="one-way delay of the UDP flow (ms)", ylabel="CDF",
             title=f"CUBIC, 1 flow, {RTT} ms RTT (every valid trial's packets)")
    left.grid(alpha=0.3)
    left.legend(fontsize=7, loc="upper left")
    paper = (run.reference.get("tables") or {}).get("table2", {}).get("values", {})
    x = np.arange(len(FLOWS))
    width = 0.8 / len(settings)
    for i, (variant, _) in enumerate(settings):
        aggs = [_metric(run, f"{variant}-rtt{RTT}-f{n}", "owd_median_ms") for n in FLOWS]
        means = [a["mean"] if a else np.nan for a in aggs]
        err = [[max(0.0, a["mean"] - a["min"]) if a else 0 for a in aggs],
               [max(0.0, a["max"] - a["mean"]) if a else 0 for a in aggs]]
        right.bar(x + (i - (len(settings) - 1) / 2) * width, means, width, yerr=err, capsize=2,
                  color=COLOURS[variant])
    marks = [(paper.get(f"cubic-rtt{RTT}-f{n}") or [np.nan])[0] for n in FLOWS]
    right.plot(x, marks, "k_", markersize=30, mew=2,
               label="the paper's CUBIC (Table 2); bars: the settings, colours as left")
    right.set(ylim=(380, 510), xlabel="concurrent TCP flows", ylabel="median one-way delay (ms)",
              title="median OWD (trimmed mean; whiskers: trial range)")
    right.set_xticks(x, [str(n) for n in FLOWS])
    right.grid(axis="y", alpha=0.3)
    right.legend(fontsize=7, loc="upper left")
    _draw_offsets(run, offset, paper)
    fig.suptitle("Beyond the paper: what CUBIC's OWD step at 400 ms needs")
    fig.tight_layout()
    return run.save(fig, "investigation_cubic_step")


def _offset(run: Run, cc: str, flows: int, queue: bool, paper: dict[str, Any]) -> dict[str, float] | None:
    """Median OWD less Table 2's (trimmed mean, and the trials' range), for the Linux or dummynet queue."""
    agg = _metric(run, f"{cc}-{QUEUE}-rtt{RTT}-f{flows}" if queue else f"{cc}-rtt{RTT}-f{flows}", "owd_median_ms")
    ref = (paper.get(f"{cc}-rtt{RTT}-f{flows}") or [None])[0]
    if not agg or ref is None:
        return None
    return {"mean": agg["mean"] - ref, "min": agg["min"] - ref, "max": agg["max"] - ref}


def _draw_offsets(run: Run, ax: Any, paper: dict[str, Any]) -> None:
    """Each algorithm's median OWD less the paper's, with the Linux queue (solid) and dummynet's (hatched)."""
    x = np.arange(len(FLOWS))
    width = 0.8 / (2 * len(ALGORITHMS))
    for i, cc in enumerate(ALGORITHMS):
        for j, queue in enumerate((False, True)):
            d = [_offset(run, cc, n, queue, paper) for n in FLOWS]
            err = [[max(0.0, v["mean"] - v["min"]) if v else 0 for v in d],
                   [max(0.0, v["max"] - v["mean"]) if v else 0 for v in d]]
            ax.bar(x + (2 * i + j - len(ALGORITHMS) + 0.5) * width, [v["mean"] if v else np.nan for v in d], width,
                   yerr=err, capsize=2, color=style(cc)["color"], hatch="//" if queue else None,
                   edgecolor="white" if queue else None,
                   label=f"{style(cc)['label']}, {'dummynet' if queue else 'Linux'} queue")
    ax.axhline(0, color="k", lw=0.8)
    low = min([0.0, *(min(b.get_y(), b.get_y() + b.get_height()) for b in ax.patches)])
    ax.set_ylim(low - 15, 12)       # room for the legend below the bars
    ax.set(xlabel="concurrent TCP flows", ylabel="median OWD less the paper's (ms)",
           title="every algorithm against Table 2, by queue")
    ax.set_xticks(x, [str(n) for n in FLOWS])
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=6, loc="lower right", ncol=2)


def section(run: Run) -> list[str]:
    """verdict.md's account: per setting the claim's verdict on its cells, the step, the three bands'
    slopes, and its delays beside Table 2's CUBIC."""
    settings = _settings(run)
    claim = _claim(run)
    if not settings or claim is None:
        return []
    bands = {k: (float(b[0]), None if b[1] is None else float(b[1])) for k, b in claim["where"]["bands_ms"].items()}
    paper = (run.reference.get("tables") or {}).get("table2", {}).get("values", {})

    def v(cell_id: str, metric: str, scale: float = 1.0, digits: int = 1) -> str:
        agg = _metric(run, cell_id, metric)
        return f"{agg['mean'] * scale:.{digits}f}" if agg else "-"

    def band_head(b: tuple[float, float | None]) -> str:
        return f"{b[0]:g}-{'end' if b[1] is None else f'{b[1]:g}'}"

    out = ["## Beyond the paper: what CUBIC's OWD step at 400 ms needs", "",
           "Claim cubic_owd_cdf_shape is judged here on each setting's cells in place of the paper's "
           "CUBIC (cells `cubic-beta08`, `cubic-nofc`, `cubic-dnqueue` at 50 ms, one thing changed each, "
           "and `cubic-beta08-dnqueue`, the two that move the step; config/collateral.yaml). "
           "Step: 5th-percentile OWD (trimmed mean), the paper's at "
           f"{claim['where']['step_ms']} ms. Slopes: % of the packets per ms in each of the paper's "
           "bands. Delays: median / mean / standard deviation in ms, the paper's Table 2 CUBIC below. "
           "Figure: investigation_cubic_step.", "",
           "| setting | the claim on its cells | step (ms) | "
           + " | ".join(f"slope {band_head(b)} ({k})" for k, b in bands.items())
           + " | 1 flow | 2 flows | 5 flows |",
           "|---|---|---|" + "---|" * len(bands) + "---|---|---|"]
    for variant, text in settings:
        c1 = f"{variant}-rtt{RTT}-f1"
        verdict = claim_under(run, variant)
        slopes = " | ".join(v(c1, owd_bands.metric_name(b), 100, 3) for b in bands.values())
        stats = ("owd_median_ms", "owd_mean_ms", "owd_std_ms")
        delays = " | ".join(" / ".join(v(f"{variant}-rtt{RTT}-f{n}", m) for m in stats) for n in FLOWS)
        out.append(f"| {text} | {verdict.verdict if verdict else 'not evaluated'} | {v(c1, 'owd_p5_ms')} | "
                   f"{slopes} | {delays} |")
    marks = " | ".join("{:.1f} / {:.1f} / {:.1f}".format(*paper[f"cubic-rtt{RTT}-f{n}"])
                       if f"cubic-rtt{RTT}-f{n}" in paper else "-" for n in FLOWS)
    out.append(f"| the paper (Table 2, Figure 3a) | - | about {claim['where']['step_ms']} | "
               + " | ".join("-" for _ in bands) + f" | {marks} |")
    out += ["", *_offset_table(run, paper)]
    return [*out, ""]


def _offset_table(run: Run, paper: dict[str, Any]) -> list[str]:
    """Every algorithm's median OWD less Table 2's, with the Linux leaf's queue and with dummynet's."""
    if not any(f"{cc}-{QUEUE}-rtt{RTT}-f{n}" in run.cells for cc in ALGORITHMS for n in FLOWS):
        return []

    def cell(cc: str, n: int, queue: bool) -> str:
        d = _offset(run, cc, n, queue, paper)
        return "-" if d is None else f"{d['mean']:+.1f} ({d['min']:+.1f} to {d['max']:+.1f})"

    out = [f"Median OWD less the paper's (Table 2, {RTT} ms), trimmed mean (trials' range), ms: the queue as "
           "Linux's leaf counts it (the paper's cells) and as dummynet counts it (`*-dnqueue`).", "",
           "| algorithm | queue | " + " | ".join(f"{n} flow{'s' if n > 1 else ''}" for n in FLOWS) + " |",
           "|---|---|" + "---|" * len(FLOWS)]
    for cc in ALGORITHMS:
        for queue in (False, True):
            out.append(f"| {style(cc)['label']} | {'dummynet' if queue else 'Linux'} | "
                       + " | ".join(cell(cc, n, queue) for n in FLOWS) + " |")
    return out
