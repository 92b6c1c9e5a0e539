"""verdict.md: what reproduced and what did not, claim by claim with the measured numbers; the
choices the report left open; where Westwood+ overtakes CUBIC; what differs from the report's
testbed (read from the trials' provenance)."""
from __future__ import annotations

from pathlib import Path

from analysis.paper_tables import to_markdown
from analysis.report import claims_markdown
from analysis.report.paper_run import (
    cc_label,
    choices_lines,
    provenance_facts,
    robustness_lines,
    this_run_lines,
    write_verdict,
)
from analysis.report.verdict_head import verdict_head
from analysis.verdicts import Verdict
from analysis.westwood import claims as ww
from analysis.westwood import investigation, investigation_base_delay
from analysis.westwood import metrics as wm
from analysis.westwood.run import CCS, TESTS, Run
from analysis.westwood.tables import tables

# What is known to differ from the report's Linux 2.6.32 senders, independent of this run.
CODE_SINCE_2_6_32 = [
    "Loss recovery: Proportional Rate Reduction (3.2) paces cwnd down during fast recovery, RACK "
    "(4.4, on by default) marks losses by time as well as by duplicate ACKs, tail loss probes (3.10).",
    "The initial window is 10 segments (2.6.39) instead of 3; CUBIC's HyStart was already there (2.6.29).",
    "Westwood+ is the same tcp_westwood module, its bandwidth filter unchanged; CUBIC's code was "
    "reworked several times (e.g. HyStart's delay threshold, 3.x-5.x).",
    "tcp_probe is the tcp:tcp_probe tracepoint (4.16) instead of the module: it fires on each "
    "incoming ACK of the flow and prints the same cwnd and tcp_current_ssthresh().",
]


def verdicts(run: Run) -> list[Verdict]:
    return ww.evaluate(run.cells, run.cfg, run.profile)


def _metric(cells: ww.Cells, cc: str, cond: str, metric: str, digits: int = 2) -> str:
    v = cells.value(cc, cond, metric)
    return f"{v:.{digits}f}" if v is not None else "-"


def _oscillation_table(run: Run) -> list[str]:
    cells = run.cells_by_cc()
    out = ["| condition | algorithm | throughput (kbit/s) | congestion events | cwnd highest - lowest (packets) "
           "| cwnd (max-min)/mean after the first event | cwnd std/mean | retransmitted packets |",
           "|---|---|---|---|---|---|---|---|"]
    delays = run.reference["sweeps"]["delay"]["conditions"]
    for cond in dict.fromkeys([*TESTS, *delays, "mismatch"]):
        for cc in CCS:
            if (cc, cond) not in cells.by_key:
                continue
            out.append(f"| {cond} | {cc_label(cc)} | {_metric(cells, cc, cond, ww.GOODPUT, 0)} | "
                       f"{_metric(cells, cc, cond, ww.EVENTS, 0)} | {_metric(cells, cc, cond, ww.CWND_RANGE, 0)} | "
                       f"{_metric(cells, cc, cond, ww.OSCILLATION)} | "
                       f"{_metric(cells, cc, cond, 'bulk0.cwnd_cv')} | "
                       f"{_metric(cells, cc, cond, 'rexmt_data_pkts', 0)} |")
    return out


def _named_trials(run: Run) -> list[str]:
    out = []
    for cond in TESTS:
        for cc in CCS:
            t = run.median_trial(cc, cond)
            if t is not None:
                n = run.reference["tests"][cond]["figures"][cc]
                out.append(f"- Fig. {n} ({cond}, {cc_label(cc)}): {t.parent.name}/{t.name}")
    return out


def render(run: Run, claims: list[Verdict]) -> str:
    facts = provenance_facts(run)
    cells = run.cells_by_cc()
    out = verdict_head(run, claims, "Westwood+ vs CUBIC", f"Cells measured: {len(run.cells)} of "
                       f"{len(run.cfg.cells_by_id)}", whose="report")
    out += ["## What the report leaves open, and what we chose", ""]
    out += choices_lines(run)
    out += ["", *claims_markdown.section(claims)]
    out += robustness_lines(run)
    out += ["## Throughput beside the report", ""]
    for t in tables(run).values():
        out += [to_markdown(t), ""]
    out += ["## The congestion window per test", "",
            "Trimmed means over the valid trials, for the report's tests, the delay sweep and the mismatch cell. "
            "cwnd highest - lowest is the report's oscillation (\"the difference between the highest and the "
            "lowest value in a single experiment\"), over the flow's whole tcp_probe series; the relative "
            "figures beside it start at the first congestion event.", "",
            *_oscillation_table(run), "", "Figures 5-10 show, per test and algorithm:", "", *_named_trials(run), ""]
    out += ["## Where Westwood+ overtakes CUBIC (beyond the report)", ""]
    for name, spec in run.reference["sweeps"].items():
        points = wm.sweep(cells, spec)
        out.append(f"- {name} sweep: {wm.describe_sweep(points, spec['unit'])}.")
        rows = [f"{p.x:g}: " + ", ".join(f"{cc_label(cc)} {p.mean[cc]:.0f}" for cc in CCS if p.mean[cc] is not None)
                for p in points if any(p.mean[cc] is not None for cc in CCS)]
        if rows:
            out.append(f"  - kbit/s by {spec['unit']}: " + "; ".join(rows))
    out += ["", *investigation.section(run), *investigation_base_delay.section(run)]
    mm = run.reference["mismatch"]
    q = run.params.get(f"{mm['cc']}-{mm['condition']}", {}).get("queue_pkts")
    out += ["", f"## Figure {mm['figure']}: the shaper queue that does not match the window", "",
            f"The setting that causes it: the bottleneck queue holds {q} packets, more than the window the "
            "end hosts' socket buffers let TCP reach, so the queue never overflows and the sender never "
            "sees a loss: cwnd grows (in slow start, by one packet per ACK) while the queue and the RTT "
            "grow with it, to seconds. Where cwnd falls, it is a spurious timeout (the RTT grows faster "
            "than the retransmission timer follows), not a loss. The report met the effect with netem and "
            "htb/tbf, whose queues were long enough to absorb the window; a queue sized to the path "
            "(50 packets here) removes it.", ""]
    out += ["## What differs from the report's testbed", "",
            "- Report: Linux 2.6.32 laptops, dummynet for delay and loss, a MikroTik RB750 setting 10 Mbit/s "
            "at layer 2, the tcp_probe module.",
            *this_run_lines(facts, "the bottleneck is HTB + pfifo, netem for delay and loss, all in one kernel.")]
    out += ["", "Known changes since 2.6.32:", "", *[f"- {line}" for line in CODE_SINCE_2_6_32]]
    return "\n".join(out) + "\n"


def write(run: Run) -> list[Path]:
    claims = verdicts(run)
    return write_verdict(run, claims, render(run, claims))
