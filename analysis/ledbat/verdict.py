"""verdict.md: claim by claim with the measured numbers, the choices the paper left open, the
completion times and the summary table, which trial each figure draws, and how this testbed
differs from the paper's (read from the trials' provenance)."""
from __future__ import annotations

from pathlib import Path

from analysis.ledbat import claims as lc
from analysis.ledbat import investigation_arrivals, investigation_delack
from analysis.ledbat import metrics as lb
from analysis.ledbat.plots import FIGURES
from analysis.ledbat.run import Run
from analysis.ledbat.tables import completion, summary, summary_markdown
from analysis.paper_tables import to_markdown
from analysis.report import claims_markdown
from analysis.report.paper_run import (
    choices_lines,
    provenance_facts,
    robustness_lines,
    this_run_lines,
    write_verdict,
)
from analysis.report.verdict_head import verdict_head
from analysis.verdicts import Verdict

PAPER_TESTBED = [
    "- Paper: the authors' LEDBAT Linux module (1000 Hz timer, 1-ms timestamps) inside the IKR SimLib "
    "simulator through the Network Simulation Cradle: a simulated 10 Mbit/s (Fig 6: 20 Mbit/s) link "
    "with a 60-packet queue, delayed ACKs patched out of the receiver where stated.",
]


def verdicts(run: Run) -> list[Verdict]:
    return lc.evaluate(run.cells, run.cfg, run.profile)


def _named_trials(run: Run) -> list[str]:
    out = []
    for name in FIGURES:
        spec = run.reference["figures"][name]
        case = run.figure_case(spec)
        if case is None:
            out.append(f"- {name}: not drawn (none of {', '.join(spec['cases'])} run)")
            continue
        trials = [f"{lc.LABEL.get(cc, cc)} {t.parent.name}/{t.name}" for cc in spec["ccs"]
                  if (t := run.median_trial(cc, case)) is not None]
        out.append(f"- {name} ({case}): " + "; ".join(trials))
    return out


def _fig6_lines(run: Run) -> list[str]:
    """LEDBAT's share of the link while the TCP flow runs, in every Fig 6 cell measured (the
    paper's 20 Mbit/s and the scaled control), with how long TCP took."""
    out = []
    cells = run.by_key()
    for name in ("fig6", "fig6s"):
        spec = run.reference["figures"][name]
        for case in spec["cases"]:
            for cc in spec["ccs"]:
                share = cells.value(cc, case, "ledbat_share_vs_tcp")
                if share is None:
                    continue
                d0, d1 = cells.value(cc, case, "bulk0.done_s"), cells.value(cc, case, "bulk1.done_s")
                done = f"; LEDBAT done at {d0:.1f} s, TCP (from 20 s) at {d1:.1f} s" if d0 and d1 else ""
                out.append(f"- {case}, {lc.LABEL[cc]}: LEDBAT's share while TCP runs {share:.2f}{done}")
    return out or ["- no Fig 6 cell measured"]


def _lone_queue_lines(run: Run) -> list[str]:
    cells = run.by_key()
    out = []
    for (cc, case), _ in sorted(cells.by_key.items()):
        q = [cells.value(cc, case, f"lone_queue_p{k}_ms") for k in (10, 50, 90)]
        if None not in q:
            out.append(f"- {case}, {lc.LABEL[cc]}: {q[0]:.1f} / {q[1]:.1f} / {q[2]:.1f} ms")
    return out or ["- not measured"]


# The first flow's start from a window of 2 packets leaves the link under half used for 1-2 s in
# every trial: a cell is listed when a trial of it spent longer than this under half the link.
UNDERUSED_LISTED_S = 5


def _underused_lines(run: Run) -> list[str]:
    """Every cell with a trial longer under half the link than a start-up takes (the lock shows here)."""
    out = []
    for cid in run.profile_cells():
        agg = (run.cells.get(cid) or {}).get("metrics", {}).get("underused_s")
        if agg and max(agg["values"]) > UNDERUSED_LISTED_S:
            out.append(f"- {cid}: " + ", ".join(f"trial {k} {v:.0f} s" for k, v in zip(agg["trials"], agg["values"],
                                                                                      strict=True)))
    return out or [f"- none: no trial spent more than {UNDERUSED_LISTED_S} s under half the link"]


def _implementation(facts: dict) -> str:
    """How this run's LEDBAT was built, from the trials' provenance (BPF struct_ops in the VM, built
    into the UML kernel from the same source)."""
    impls = {i.split()[0] for name, found in facts["impls"].items() if name.startswith("ledbat") for i in found}
    where = "; ".join(sorted(impls)) or "-"
    return (f"the bottleneck is HTB + a 60-packet pfifo, netem for the delay, all in one kernel; LEDBAT is "
            f"this repo's (cc/ledbat/ledbat.h, implementation: {where}).")


def render(run: Run, claims: list[Verdict]) -> str:
    facts = provenance_facts(run)
    out = verdict_head(run, claims, "LEDBAT decrease schemes",
                       f"Cells measured: {len(run.cells)} of the profile's {len(run.profile_cells())}")
    out += ["## What the paper leaves open, and what we chose", ""]
    out += choices_lines(run)
    out += ["", *claims_markdown.section(claims)]
    out += robustness_lines(run)
    out += ["## Completion times beside the paper", "", to_markdown(completion(run)), "",
            "## Beyond the paper: fairness and utilisation", "",
            "jain: Jain's index per 1-s bin over the LEDBAT flows running through the whole bin, averaged over "
            "the bins with two or more (how evenly the link is divided second by second). share: Jain's index of "
            "the bytes each flow moved over each stretch of time with one set of two or more flows running, "
            "averaged weighted by the stretches' lengths (the share of the bandwidth the claims judge). "
            "Utilisation: all bytes over first start to last completion, over "
            f"the bottleneck rate (headers cap it at {lb.GOODPUT_CEILING:.3f}: the shaper counts IP bytes).", "",
            summary_markdown(summary(run)), "",
            "## Fig 6: LEDBAT against standard TCP", "", *_fig6_lines(run), "",
            "## The queue a lone LEDBAT flow holds (what a late-comer's first samples see)", "",
            "10th / 50th / 90th percentile of the bottleneck's queueing delay over the second half of the "
            "first flow's lone phase (TARGET is 25 ms). LEDBAT steers by one-way delays from TCP timestamps "
            "(1-ms resolution): where the median is below TARGET, latency the stack adds to the samples stands "
            "in for queue, and where the 10th percentile is far below the median, a late-comer's first samples "
            "can catch the queue nearly empty and learn the true base delay, which removes the late-comer "
            "advantage the paper's simulator shows.", "",
            *_lone_queue_lines(run), "",
            "## Time under half the link, per trial", "",
            "Seconds from the first start to the last completion in which all flows together moved less than "
            "half the bottleneck rate: a flow held at a window of 2-3 packets by the receiver's delayed ACKs "
            "shows here (figures/crossval/crossval.md). The first flow's start from a window of 2 takes 1-2 s "
            f"of it in every trial; listed are the cells with a trial over {UNDERUSED_LISTED_S} s.", "",
            *_underused_lines(run), "",
            *investigation_delack.section(run),
            *investigation_arrivals.section(run),
            "## The trial each figure draws (nearest its cell's median last completion)", "", *_named_trials(run), ""]
    out += ["## What differs from the paper's testbed", "", *PAPER_TESTBED,
            *this_run_lines(facts, _implementation(facts), 1000)]
    return "\n".join(out) + "\n"


def write(run: Run) -> list[Path]:
    claims = verdicts(run)
    return write_verdict(run, claims, render(run, claims))
