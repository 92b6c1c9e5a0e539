"""Beyond the report: where Test 2's throughput could come from.

At a one-second round trip the report measured 649 (CUBIC) and 240 kbit/s (Westwood+), far below
ours, and gives neither its test time nor its socket buffers. The cells `t2-len*` vary the
trial length (30 to 1200 s), `t2-rcv*` and `t2-snd*` fix the receiver's or the sender's socket buffer
(120 s, like Test 2). This module draws both algorithms' throughput over each against the report's
two numbers, and says which setting brings both within the claim's tolerance of them, if any: under
the verdict rule, a number is on the report's only when the whole trial range agrees (`near`).
A sweep against the report's numbers is a fit where it locates a setting per number (the receive
buffer at which each algorithm would cross its number): the config's `fit` says so, and so does the
section.
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

from analysis.report.captions import draws
from analysis.report.claims_markdown import fit_text
from analysis.report.paper_run import cc_label
from analysis.verdicts import Measure, near
from analysis.westwood import claims as ww
from analysis.westwood.run import CCS, Run, style

CLAIM = "cubic_ahead_test2"
AXES = (("length", "t2-len", "trial length (s)"), ("rcvbuf", "t2-rcv", "receiver's socket buffer (KB)"),
        ("sndbuf", "t2-snd", "sender's socket buffer (KB)"))


@dataclass
class Setting:
    """One investigated condition (Test 2 itself included, as 120 s with the kernel's buffers)."""

    axis: str
    cond: str
    x: float                                   # seconds, or KB for a buffer
    label: str
    m: dict[str, Measure | None]
    span: dict[str, tuple[float, float] | None]     # the trials' lowest and highest throughput


def settings(run: Run) -> list[Setting]:
    """The measured settings in axis order; Test 2 itself appears on the length axis at its own
    trial length, and as the kernel's autotuned buffers in the table."""
    cells = run.cells_by_cc()
    conds = sorted({cond for _, cond in cells.params})
    out = []
    for axis, prefix, _ in AXES:
        for cond in conds:
            if not re.fullmatch(re.escape(prefix) + r"\d+k?", cond):
                continue
            p = cells.params[("cubic", cond)]
            x = float(p["duration_s"]) if axis == "length" else float(p[axis]) / 1024
            label = f"{x:g} s" if axis == "length" else f"{axis} {x:g} KB"
            out.append(Setting(axis, cond, x, label, *_measured(cells, cond)))
    length = _trial_length(run, "t2")
    if length is not None and any(cells.m(cc, "t2", ww.GOODPUT) for cc in CCS):
        out.append(Setting("length", "t2", length, f"{length:g} s (Test 2)", *_measured(cells, "t2")))
    order = {a: i for i, (a, _, _) in enumerate(AXES)}
    return sorted(out, key=lambda s: (order[s.axis], s.x))


def _trial_length(run: Run, cond: str) -> float | None:
    """How long the condition's trials ran, from the first valid trial's spec."""
    for cc in CCS:
        for trial in run.valid_trials(f"{cc}-{cond}"):
            if (trial / "spec.json").exists():
                return float(json.loads((trial / "spec.json").read_text())["duration_s"])
    return None


def _measured(cells: ww.Cells, cond: str) -> tuple[dict[str, Measure | None], dict[str, tuple[float, float] | None]]:
    aggs = {cc: ((cells.by_key.get((cc, cond)) or {}).get("metrics") or {}).get(ww.GOODPUT) for cc in CCS}
    return ({cc: cells.m(cc, cond, ww.GOODPUT) for cc in CCS},
            {cc: (float(a["min"]), float(a["max"])) if a else None for cc, a in aggs.items()})


def _report(run: Run) -> tuple[dict[str, float], float]:
    values = run.reference["tables"]["throughput"]["values"]
    claim = next(c for c in run.reference["claims"] if c["id"] == CLAIM)
    return {cc: float(values[f"{cc}-t2"][0]) for cc in CCS}, float(claim["bars"]["tolerance_pct"]["value"])


def on_report(run: Run, s: Setting) -> dict[str, str]:
    """Per algorithm, how its throughput stands to the report's number: held (within the claim's
    tolerance over the whole trial range), failed, indistinguishable, or missing."""
    ref, tol = _report(run)
    return {cc: near(s.cond, "", s.m[cc], ref[cc], tol).outcome for cc in CCS}


@draws("investigation_test2")
def fig_test2(run: Run) -> list[Path]:
    """Beyond the report, what could hold Test 2's senders to the report's throughput: throughput
    per algorithm against the trial length (left) and a fixed socket buffer (right), whiskers the
    trial range, the report's two numbers as dashed lines. Drawn when an investigation cell was run."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    found = settings(run)
    if not any(s.cond != "t2" for s in found):
        return []
    ref, tol = _report(run)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    for cc in CCS:
        st = style(cc)
        for ax, axes in ((left, ("length",)), (right, ("rcvbuf", "sndbuf"))):
            for axis in axes:
                pts = [s for s in found if s.axis == axis and s.m[cc] is not None and s.span[cc]]
                if not pts:
                    continue
                xs = [s.x for s in pts]
                ys = [s.m[cc].value for s in pts]                         # type: ignore[union-attr]
                lo = [max(0.0, y - s.span[cc][0]) for s, y in zip(pts, ys, strict=True)]   # type: ignore[index]
                hi = [max(0.0, s.span[cc][1] - y) for s, y in zip(pts, ys, strict=True)]   # type: ignore[index]
                hollow = axis == "sndbuf"
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt=("s--" if hollow else "o-"), color=st["color"],
                            mfc="white" if hollow else st["color"], capsize=3,
                            label=f"{st['label']}" + (", sender's buffer" if hollow else
                                                      ", receiver's buffer" if axis == "rcvbuf" else ""))
        for ax in (left, right):
            ax.axhline(ref[cc], color=st["color"], ls=":", lw=1.2)
            ax.axhspan(ref[cc] * (1 - tol / 100), ref[cc] * (1 + tol / 100), color=st["color"], alpha=0.12)
    left.set(xscale="log", xlabel="trial length (s), kernel's socket buffers",
             ylabel="throughput (kbit/s, trimmed mean; whiskers: trial range)", yscale="log",
             title="Test 2 (10 Mbit/s, 500 ms each way): trial length")
    right.set(xscale="log", xlabel="fixed socket buffer (KB), 120-s trials",
              title="Test 2: one fixed socket buffer")
    for ax, axes in ((left, ("length",)), (right, ("rcvbuf", "sndbuf"))):
        ticks = sorted({s.x for s in found if s.axis in axes})
        if ticks:
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.minorticks_off()
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    left.text(0.01, 0.02, f"dotted: the report's 649 and 240 kbit/s; band: within {tol:g} %",
              transform=left.transAxes, fontsize=7)
    fig.suptitle("Beyond the report: what could hold Test 2's senders to the report's throughput")
    fig.tight_layout()
    return run.save(fig, "investigation_test2")


def section(run: Run) -> list[str]:
    """verdict.md's account: per setting both throughputs, their ratio and how each stands to the
    report's number; then what the settings show."""
    found = settings(run)
    if not any(s.cond != "t2" for s in found):
        return []
    ref, tol = _report(run)
    out = ["## Beyond the report: what could give Test 2's throughput", "",
           f"The report's Test 2 numbers, {ref['cubic']:.0f} and {ref['westwood']:.0f} kbit/s, are a small part "
           "of what either algorithm reaches on this path in 120 s; the report gives neither its test time nor "
           "its socket buffers. The `t2-len*` cells vary the trial length, the `t2-rcv*` and `t2-snd*` cells fix "
           "one socket buffer (min, initial and max of tcp_rmem or tcp_wmem; 120 s). Figure: "
           f"investigation_test2. A number is on the report's when its whole trial range lies within {tol:g} % "
           "of it (the claim's bar); 'indistinguishable' when the range straddles that band.", ""]
    out += [_finding(run, found), ""]
    fit = (next(c for c in run.reference["claims"] if c["id"] == CLAIM).get("investigation") or {}).get("fit")
    if fit:
        out += [fit_text(fit), ""]
    out += ["| setting | CUBIC (kbit/s) | Westwood+ (kbit/s) | Westwood+ / CUBIC | CUBIC vs 649 | Westwood+ vs 240 |",
            "|---|---|---|---|---|---|"]
    for s in found:
        ratio = (s.m["westwood"].value / s.m["cubic"].value   # type: ignore[union-attr]
                 if s.m["cubic"] and s.m["westwood"] and s.m["cubic"].value else None)
        stand = on_report(run, s)
        out.append(f"| {s.label} | {cell_text(s.m['cubic'])} | {cell_text(s.m['westwood'])} | "
                   f"{'-' if ratio is None else f'{ratio:.2f}'} | {stand['cubic']} | {stand['westwood']} |")
    share = ref["westwood"] / ref["cubic"]
    out.append(f"| the report | {ref['cubic']:.0f} | {ref['westwood']:.0f} | {share:.2f} | | |")
    return [*out, ""]


def _crossing(found: list[Setting], axis: str, cc: str, target: float) -> str:
    """Where, between two neighbouring measured settings of an axis, the algorithm's throughput
    passes the report's number (linear between them), or ''."""
    pts = [(s.x, s.m[cc].value) for s in found if s.axis == axis and s.m[cc] is not None]  # type: ignore[union-attr]
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if (y0 - target) * (y1 - target) <= 0 and y0 != y1:
            x = x0 + (x1 - x0) * (target - y0) / (y1 - y0)
            return (f"{cc_label(cc)} would reach the report's {target:.0f} kbit/s at about {x:.0f} KB "
                    f"({y0:.0f} at {x0:g} KB, {y1:.0f} at {x1:g} KB)")
    return ""


def cell_text(m: Measure | None) -> str:
    if m is None:
        return "-"
    spread = "" if m.noise is None else f" (range {m.noise:.0f})"
    return f"{m.value:.0f}{spread}"


def _finding(run: Run, found: list[Setting]) -> str:
    """The settings that put both numbers on the report's, or, when none does, how near the nearest
    came and which way each axis moves the two algorithms."""
    ref, _ = _report(run)
    both = [s for s in found if all(v == "held" for v in on_report(run, s).values())]
    if both:
        return ("What the cells show: " + ", ".join(s.label for s in both) + " put both algorithms' throughput "
                "on the report's numbers.")
    parts = []
    for cc in CCS:
        held = [s.label for s in found if on_report(run, s)[cc] == "held"]
        parts.append(f"{cc_label(cc)}'s {ref[cc]:.0f} kbit/s " + (f"at {', '.join(held)}" if held else "at none"))
    ratios = [(s, s.m["westwood"].value / s.m["cubic"].value) for s in found    # type: ignore[union-attr]
              if s.m["cubic"] and s.m["westwood"] and s.m["cubic"].value]
    text = "What the cells show: no setting puts both numbers on the report's; they reach " + "; ".join(parts) + "."
    crossings = [c for cc in CCS if (c := _crossing(found, "rcvbuf", cc, ref[cc]))]
    if crossings:
        text += " With a fixed receive buffer " + "; ".join(crossings) + "."
    if ratios:
        lo, hi = min(r for _, r in ratios), max(r for _, r in ratios)
        share = f"is {lo:.2f}" if len(ratios) == 1 else f"ranges from {lo:.2f} to {hi:.2f} over the settings"
        report_share = ref["westwood"] / ref["cubic"]
        text += f" Westwood+'s share of CUBIC's throughput {share}, against the report's {report_share:.2f}."
    return text
