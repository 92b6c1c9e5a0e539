"""Beyond the paper: the five flows' arrivals (md_five_flows, Figure 4).

The paper reads Figure 4 as a story of arrivals: with MD-NF1 "the first two do perfectly
synchronize but all subsequent flows disturb the others before an equilibrium can be reached",
while MDvar's flows "always share the link equally after a short time". The claim reads each
arrival (metrics.arrival_metrics: the share of the bytes over the last seconds before the next
flow joins); this section sets every cell of the case beside it, the other schemes and the twins
included, with the queue's minimum over each newcomer's first seconds: a newcomer that sees the
queue empty measures the true base delay, so the late-comer's advantage, the mechanism behind a
disturbance, has nothing to act on.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.ledbat import claims as lc
from analysis.ledbat import metrics as lb
from analysis.ledbat.run import Run, style
from analysis.report.captions import draws

SECTION = "Beyond the paper: the five flows' arrivals"
FIGURE = "investigation_arrivals"
CLAIM = "md_five_flows"
DISTURBED = "ledbat-md-nf1"         # the scheme whose later arrivals the paper says disturb
SETTLES = "ledbat-mdvar"            # the scheme it says shares equally after a short time


@dataclass
class Cell:
    cell_id: str
    cc: str
    label: str                      # scheme, and the receiver when it is not the reference's


def _claim(run: Run) -> dict[str, Any]:
    return next(c for c in run.reference["claims"] if c["id"] == CLAIM)


def cells(run: Run) -> list[Cell]:
    """The profile's cells at the claim's case, and the twins that repeat it, with trials."""
    case = _claim(run)["where"]["case"]
    out = []
    for cid in run.profile_cells():
        p = run.params[cid]
        if p.get("case") != case and p.get("twin_of") != case:
            continue
        if not (run.cells.get(cid) or {}).get("n_valid"):
            continue
        label = lc.LABEL[p["cc"]]
        if p.get("twin_of"):
            label += ", quick ACKs" if p["quickack"] else ", delayed ACKs"
        out.append(Cell(cid, p["cc"], label))
    return out


def arrivals(run: Run, cell_id: str) -> list[int]:
    """The arrivals (k: flow k joins) the cell reports."""
    names = (run.cells.get(cell_id) or {}).get("metrics", {})
    return sorted(int(m.removeprefix("arrival").removesuffix("_jain")) for m in names
                  if m.startswith("arrival") and m.endswith("_jain"))


def _range(run: Run, cell_id: str, metric: str, digits: int) -> str:
    agg = (run.cells.get(cell_id) or {}).get("metrics", {}).get(metric)
    if not agg:
        return "-"
    vals = agg["values"]
    return f"{agg['mean']:.{digits}f} ({min(vals):.{digits}f}-{max(vals):.{digits}f})"


def section(run: Run) -> list[str]:
    found = cells(run)
    if not found:
        return []
    bar = float(_claim(run)["bars"]["jain_min"]["value"])
    ks = sorted({k for c in found for k in arrivals(run, c.cell_id)})
    out = [f"## {SECTION}", "",
           "Figure 4 read the way the paper tells it: per arrival, Jain's index over the last "
           f"{lb.ARRIVAL_SETTLED_S:.0f} s before the next flow joins (after the last one, as long after it as "
           "the flows are apart), of the bytes each flow moved, i.e. whether the flows had reached an equal share "
           "when the next one came, and "
           f"the queue's minimum over the newcomer's first {lb.ARRIVAL_SETTLED_S:.0f} s (0: it measures the true "
           f"base delay at once, and the late-comer's advantage has nothing to act on). Trimmed mean (range over "
           f"the trials); figure {FIGURE}. The claim's bar: {bar}.", "",
           "| cell | " + " | ".join(f"flow {k} joins: Jain" for k in ks) + " | newcomer's queue minimum, largest |",
           "|---|" + "---|" * (len(ks) + 1)]
    for c in found:
        qmax = _largest(run, c.cell_id, ks)
        out.append(f"| {c.label} (`{c.cell_id}`) | " + " | ".join(_range(run, c.cell_id, f"arrival{k}_jain", 3)
                                                               for k in ks) + f" | {qmax} |")
    out.append("")
    if any(c.cc == lc.LINEAR for c in found):
        out += ["Linear decrease at the same case (a cell of Figure 5) is the contrast: its queue is not drained "
                "when a flow joins, so the newcomer takes its base delay with the others' queue in it, the "
                "late-comer's advantage the multiplicative schemes are meant to remove.", ""]
    out += [f"The claim {CLAIM} makes its comparisons on these arrivals (its section above); with a twin in place "
            "of its paper cell it is judged again in the section on the receiver's delayed ACKs.", ""]
    return out


def _largest(run: Run, cell_id: str, ks: list[int]) -> str:
    vals = [v for k in ks for v in ((run.cells.get(cell_id) or {}).get("metrics", {})
                                    .get(f"arrival{k}_queue_min_ms") or {}).get("values", [])]
    return f"{max(vals):.1f} ms" if vals else "-"


@draws(FIGURE, title=lambda ref, stem: SECTION)
def fig_arrivals(run: Run) -> list[Path]:
    """Jain's index before each next arrival, per cell: every trial a dot, the trimmed mean a line."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    found = cells(run)
    if not found:
        return []
    bar = float(_claim(run)["bars"]["jain_min"]["value"])
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    width = 0.8 / len(found)
    for i, c in enumerate(found):
        ks = arrivals(run, c.cell_id)
        metrics = run.cells[c.cell_id]["metrics"]
        dx = (i - (len(found) - 1) / 2) * width
        colour = style(c.cc)["color"]
        twin = bool(run.params[c.cell_id].get("twin_of"))
        ax.plot([k + dx for k in ks], [metrics[f"arrival{k}_jain"]["mean"] for k in ks], marker="_", ms=14, lw=1,
                color=colour, ls="--" if twin else "-", label=c.label)
        for k in ks:
            vals = metrics[f"arrival{k}_jain"]["values"]
            ax.scatter([k + dx] * len(vals), vals, s=10, color=colour, alpha=0.7, marker="x" if twin else "o")
    ax.axhline(bar, color="grey", ls="--", lw=0.8, label=f"the claim's bar ({bar})")
    ax.set_xticks(sorted({k for c in found for k in arrivals(run, c.cell_id)}))
    ax.set_xlabel(f"flow k joins; index over the last {lb.ARRIVAL_SETTLED_S:.0f} s before flow k+1 joins")
    ax.set_ylabel("Jain's index")
    ax.set_ylim(0.0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(f"{SECTION}: {_claim(run)['where']['case']}", fontsize=9)
    fig.tight_layout()
    return run.save(fig, FIGURE)
