"""Beyond the paper: what CUBIC's OWD step at 400 ms needs (claim cubic_owd_cdf_shape).

Our CUBIC's CDF (one flow, 50 ms) leaves zero before the paper's step, and Table 2's CUBIC delays
lie further above ours than NewReno's and H-TCP's do (verdict.md gives both). Where the CDF
leaves zero is the queue CUBIC leaves after a loss; where it is steep, the window CUBIC lingers at
(its plateau near W_max). The cells `cubic-beta08`, `cubic-nofc` and `cubic-dnqueue` change one
thing each (config/collateral.yaml, extra_matrices): the window kept at a loss, fast convergence,
and the queue's size as dummynet counts it; `cubic-beta08-dnqueue` the two that move the step.
Each setting is judged by the claim itself, its cells standing in for the paper's CUBIC, and its
delays by the Table 2 claims (table2_median, table2_mean, table2_deviation) on its CUBIC rows. The
combination was chosen after the single settings' runs, as the two that moved the step toward the
paper's: a fit, which the config's `fit` describes and the section says. NewReno and H-TCP run with
dummynet's queue too (`newreno-dnqueue`, `htcp-dnqueue`): whether the queue explains the offset all
three share.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from analysis.aggregate import trimmed_stats
from analysis.collateral import owd_bands
from analysis.collateral.claims import CLAIMS, Cells, cubic_owd_cdf_shape
from analysis.collateral.run import FLOWS, Run, style
from analysis.report.captions import draws
from analysis.report.claims_markdown import fit_text
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
TABLE2 = ("table2_median", "table2_mean", "table2_deviation")
# The curve's slope at a finer step than the paper's 40-ms reading (ms; None: to the curve's end).
FINE = ((340.0, 360.0), (360.0, 380.0), (380.0, 400.0), (400.0, 420.0), (420.0, 440.0), (440.0, 460.0),
        (460.0, 480.0), (480.0, None))


def _claim(run: Run) -> dict[str, Any] | None:
    return next((c for c in (run.cfg.data.get("reference") or {}).get("claims", []) if c["id"] == CLAIM), None)


def _settings(run: Run) -> list[tuple[str, str]]:
    """The settings with a measured 1-flow cell; none but the paper's: no investigation here."""
    got = [(v, text) for v, text in SETTINGS if f"{v}-rtt{RTT}-f1" in run.cells]
    return got if len(got) > 1 else []


def _as_cubic(run: Run, variant: str) -> Cells:
    """One setting's cells standing in for the paper's CUBIC (and nothing else)."""
    params = {cid: c.params for cid, c in run.cfg.cells_by_id.items()}
    tables = run.reference.get("tables") or {}
    cells = Cells.from_cells(run.cells, params, tables)
    return Cells({("cubic", r, n): c for (v, r, n), c in cells.by_key.items() if v == variant}, tables)


def claim_under(run: Run, variant: str) -> Verdict | None:
    """The claim judged on one setting's cells, as if they were the paper's CUBIC."""
    claim = _claim(run)
    view = _as_cubic(run, variant)
    return judge(claim, cubic_owd_cdf_shape(view, claim)) if claim is not None and view.by_key else None


def table2_under(run: Run, variant: str) -> dict[str, dict[str, int]]:
    """Table 2's claims on the CUBIC rows at 50 ms, one setting's cells standing in for the paper's
    CUBIC: per claim, how many of its comparisons held, failed, were within the noise."""
    claims = {c["id"]: c for c in (run.reference.get("claims") or []) if c["id"] in TABLE2}
    view = _as_cubic(run, variant)
    out = {}
    for cid, claim in claims.items():
        mine = {**claim, "where": {**claim["where"], "rtt_ms": [RTT]}, "headline": []}
        comps = [c for c in CLAIMS[cid](view, mine) if c.where.endswith("CUBIC")]
        out[cid] = {o: sum(c.outcome == o for c in comps) for o in ("held", "failed", "indistinguishable")}
    return out


def fine_slopes(run: Run, variant: str) -> list[float | None]:
    """The CUBIC 1-flow cell's share of packets per ms in each FINE band (trimmed mean over trials)."""
    trials = run.valid_trials(f"{variant}-rtt{RTT}-f1")
    out: list[float | None] = []
    for band in FINE:
        vals = [d for t in trials if (t / "spec.json").exists()
                and (d := owd_bands.density(owd_bands.owd_samples(t), band)) is not None]
        out.append(float(trimmed_stats(vals)["mean"]) if vals else None)
    return out


def _metric(run: Run, cell_id: str, metric: str) -> dict[str, float] | None:
    return run.cells.get(cell_id, {}).get("metrics", {}).get(metric)


@draws("investigation_cubic_step")
def fig_cubic_step(run: Run) -> list[Path]:
    """CUBIC's OWD CDF with one flow under each setting, the paper's step and bands shaded (left),
    each setting's median OWD per flow count beside Table 2's CUBIC (middle), and each algorithm's
    median OWD less the paper's with the Linux queue and dummynet's (right)."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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
    fit = (claim.get("investigation") or {}).get("fit")
    if fit:
        out += ["", fit_text(fit)]
    out += ["", *_table2_lines(run, settings), "", *_fine_lines(run, settings), "", *_offset_table(run, paper)]
    return [*out, ""]


def _table2_lines(run: Run, settings: list[tuple[str, str]]) -> list[str]:
    """Per setting, Table 2's CUBIC rows at 50 ms judged by the Table 2 claims on its cells."""
    head = [f"Table 2's CUBIC rows at {RTT} ms (one, two, five flows) judged by the claims table2_median, "
            "table2_mean and table2_deviation on each setting's cells in place of the paper's CUBIC: "
            "comparisons held / failed / within the trials' noise.", "",
            "| setting | median | mean | standard deviation |", "|---|---|---|---|"]
    rows = []
    for variant, text in settings:
        got = table2_under(run, variant)
        rows.append(f"| {text} | " + " | ".join(
            "{held} / {failed} / {indistinguishable}".format(**got[c]) if c in got else "-" for c in TABLE2) + " |")
    return [*head, *rows]


def _fine_lines(run: Run, settings: list[tuple[str, str]]) -> list[str]:
    """Per setting, the 1-flow curve's slope in 20-ms bands, its steepest band, and where it ends."""
    def head(b: tuple[float, float | None]) -> str:
        return f"{b[0]:g}-{'end' if b[1] is None else f'{b[1]:g}'}"

    out = [f"The same curves (one flow, {RTT} ms) at a finer step than the paper's 40-ms reading: % of the "
           "packets per ms in each 20-ms band (trimmed mean over the trials), the steepest band, and the "
           "curve's end (the largest OWD, trimmed mean) in ms.", "",
           "| setting | " + " | ".join(head(b) for b in FINE) + " | steepest | end |",
           "|---|" + "---|" * (len(FINE) + 2)]
    for variant, text in settings:
        slopes = fine_slopes(run, variant)
        got = [(x, b) for x, b in zip(slopes, FINE, strict=True) if x is not None]
        steepest = head(max(got, key=lambda p: p[0])[1]) if got else "-"
        end = _metric(run, f"{variant}-rtt{RTT}-f1", "owd_max_ms")
        out.append(f"| {text} | " + " | ".join("-" if x is None else f"{100 * x:.2f}" for x in slopes)
                   + f" | {steepest} | {'-' if end is None else format(end['mean'], '.1f')} |")
    return out


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
