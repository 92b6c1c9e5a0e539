"""Beyond the paper: what the receiver's delayed ACKs decide.

The paper ran its simulations with delayed ACKs patched out of the receiver (sections 4 and 5.1)
except in Figure 6 (section 5.4), and leaves open whether MD-NF2, the variant with a noise filter,
had them (reference.choices: delayed ACKs). A delayed ACK holds an odd segment for a round trip;
LEDBAT reads that wait as queueing delay, and at a window of 2-3 packets it can keep a flow there
for minutes (figures/crossval/crossval.md). The cells with `twin_of` repeat a paper case with the
receiver's setting flipped; each claim whose comparisons read the twin's variant at that case is
judged again with the twin standing in for the paper's cell, by the claim's own comparisons under
the verdict rule, so the section shows which verdicts rest on the reading.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from analysis.ledbat import claims as lc
from analysis.ledbat import metrics as lb
from analysis.ledbat.plots import FLOW_COLOURS
from analysis.ledbat.run import Run
from analysis.report.captions import draws
from analysis.verdicts import Verdict

SECTION = "Beyond the paper: what the receiver's delayed ACKs decide"
FIGURE = "investigation_delack"
# The numbers set beside each other for a twin and its paper cell (those both report).
NUMBERS = (("bulk0.done_s", "flow 1 done", "s", 1), ("bulk1.done_s", "flow 2 done", "s", 1),
           ("utilisation", "utilisation", "", 3), ("jain_mean", "Jain", "", 3),
           ("underused_s", "under half the link", "s", 1), ("ledbat_share_vs_tcp", "LEDBAT's share vs TCP", "", 2),
           ("lone_queue_p50_ms", "lone queue (median)", "ms", 1))


@dataclass
class Twin:
    cell_id: str
    cc: str
    twin_of: str                    # the paper's case it repeats
    quickack: bool                  # the twin's receiver setting

    @property
    def paper_cell(self) -> str:
        return f"{self.cc}-{self.twin_of}"

    @property
    def setting(self) -> str:
        return "quick ACKs" if self.quickack else "delayed ACKs"

    @property
    def paper_setting(self) -> str:
        return "delayed ACKs" if self.quickack else "quick ACKs"


@dataclass
class Rejudged:
    twin: Twin
    changed: list[tuple[Verdict, Verdict]]      # (as the reference reads it, with the twin), per claim it touches


def twins(run: Run) -> list[Twin]:
    """The twin cells of the profile measured beside their paper cell."""
    out = []
    for cid in run.profile_cells():
        p = run.params[cid]
        if "twin_of" not in p:
            continue
        t = Twin(cid, p["cc"], p["twin_of"], bool(p["quickack"]))
        if all((run.cells.get(c) or {}).get("n_valid", 0) > 0 for c in (cid, t.paper_cell)):
            out.append(t)
    return out


def _evidence(v: Verdict) -> list[str]:
    return v.held + v.failed + v.indistinguishable + v.missing


def rejudge(run: Run) -> list[Rejudged]:
    """Per twin, the claims its cell changes when it stands in for the paper's (their comparisons
    read other numbers), with both verdicts."""
    reference = {v.claim: v for v in lc.evaluate(run.cells, run.cfg, run.profile)}
    out = []
    for t in twins(run):
        swapped = {**run.cells, t.paper_cell: run.cells[t.cell_id]}
        flipped = {v.claim: v for v in lc.evaluate(swapped, run.cfg, run.profile)}
        changed = [(reference[c], flipped[c]) for c in reference
                   if c not in lc.READS_TWINS and _evidence(reference[c]) != _evidence(flipped[c])]
        out.append(Rejudged(t, changed))
    return out


def _value(run: Run, cell_id: str, metric: str) -> float | None:
    agg = (run.cells.get(cell_id) or {}).get("metrics", {}).get(metric)
    return None if not agg else float(agg["mean"])


def numbers_table(run: Run, t: Twin) -> list[str]:
    rows = [f"| {label} | {_fmt(a, unit, d)} | {_fmt(b, unit, d)} |"
            for metric, label, unit, d in NUMBERS
            if (a := _value(run, t.paper_cell, metric)) is not None
            and (b := _value(run, t.cell_id, metric)) is not None]
    return [f"| {lc.LABEL[t.cc]}, {t.twin_of} | {t.paper_setting} (the reference's reading) | {t.setting} |",
            "|---|---|---|", *rows]


def _fmt(x: float, unit: str, digits: int) -> str:
    return f"{x:.{digits}f}" + (f" {unit}" if unit else "")


def section(run: Run) -> list[str]:
    found = rejudge(run)
    if not found:
        return []
    out = [f"## {SECTION}", "",
           "The paper's simulations ran without delayed ACKs except Figure 6, and leave MD-NF2's setting "
           "open (the choices above). Each cell below repeats a case of the paper with the receiver's setting "
           "flipped; the claims whose comparisons read it are judged again with it in place of the paper's "
           f"cell, by their own comparisons under the verdict rule. Figure: {FIGURE} (the trial nearest each "
           "cell's median last completion; rates per 1-s bin, the queue's delay in grey). Numbers: the "
           "cells' trimmed means.", ""]
    for r in found:
        t = r.twin
        out += [f"### {lc.LABEL[t.cc]} at {t.twin_of} with {t.setting} (`{t.cell_id}`)", "",
                *numbers_table(run, t), ""]
        locked = _value(run, t.cell_id, "underused_s")
        if locked is not None:
            out += [f"Time under half the link per trial: {t.setting} {_per_trial(run, t.cell_id)}; "
                    f"{t.paper_setting} {_per_trial(run, t.paper_cell)}.", ""]
        if not r.changed:
            out += ["No claim's comparisons change with this cell in place of the paper's.", ""]
            continue
        out += ["| claim | verdict, the reference's reading | verdict with this cell | comparisons held / failed / "
                "within noise |", "|---|---|---|---|"]
        for ref, new in r.changed:
            c = new.counts
            flag = "" if ref.verdict == new.verdict else " (changes)"
            out.append(f"| {ref.claim} | {ref.verdict} | **{new.verdict}**{flag} | {c['held']} / {c['failed']} / "
                       f"{c['indistinguishable']} |")
        out.append("")
    return out


def _per_trial(run: Run, cell_id: str) -> str:
    agg = (run.cells.get(cell_id) or {}).get("metrics", {}).get("underused_s")
    return "-" if not agg else ", ".join(f"{v:.0f}" for v in agg["values"]) + " s"


@draws(FIGURE, title=lambda ref, stem: SECTION)
def fig_delack(run: Run) -> list[Path]:
    """One row per twin (a paper case with the receiver's delayed ACKs flipped): its paper cell
    (left) and the twin (right), per-flow rate and the queue."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    found = twins(run)
    if not found:
        return []
    fig, axes = plt.subplots(len(found), 2, figsize=(11, 2.8 * len(found)), squeeze=False, sharey="row")
    for row, t in enumerate(found):
        for col, (cell_id, setting) in enumerate(((t.paper_cell, t.paper_setting), (t.cell_id, t.setting))):
            ax = axes[row, col]
            trial = lb.median_trial(run.results, cell_id, run.cells.get(cell_id))
            if trial is None:
                ax.set_axis_off()
                continue
            _panel(ax, lb.load_series(trial), f"{lc.LABEL[t.cc]}, {t.twin_of}, {setting} "
                                              f"({trial.parent.name}/{trial.name})")
    for ax in axes[-1]:
        ax.set_xlabel("time since the first flow started (s)")
    fig.suptitle(f"{SECTION}: the reference's reading (left) and the receiver flipped (right)", fontsize=10)
    fig.tight_layout()
    return run.save(fig, FIGURE)


def _panel(ax: Any, s: lb.TrialSeries, title: str) -> None:

    for j, f in enumerate(s.flows):
        colour = FLOW_COLOURS[j % len(FLOW_COLOURS)] if f.cc.startswith("ledbat") else "black"
        done = f" (done {f.done_s:.0f} s)" if f.done_s is not None else ""
        label = (f"flow {j + 1}" if f.cc.startswith("ledbat") else "TCP") + done
        ax.step(np.arange(len(f.rate_mbit)) * lb.BIN_S, f.rate_mbit, where="post", color=colour, lw=0.8, label=label)
    ax.set_ylim(0, s.rate_kbit / 1000 * 1.05)
    ax.set_ylabel("rate (Mbit/s)")
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=6, loc="upper right")
    axq = ax.twinx()
    axq.plot(s.queue_t, s.queue_ms, color="grey", lw=0.3, alpha=0.6)
    axq.set_ylim(0, 60 * 1500 * 8 / s.rate_kbit * 1.05)
    axq.set_ylabel("queue (ms)", fontsize=7, color="grey")
