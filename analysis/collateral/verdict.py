"""verdict.md: what reproduced and what did not, claim by claim, with the measured numbers, and
what differs between the paper's testbed and this run (read from the trials' provenance)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis.collateral import claims as collateral
from analysis.collateral import investigation, investigation_cubic, modes
from analysis.collateral.run import CCS, RTTS, Run
from analysis.collateral.tables import tables
from analysis.paper_tables import to_markdown
from analysis.report import claims_markdown
from analysis.report.paper_run import choices_lines, provenance_facts, robustness_lines, this_run_lines, write_verdict
from analysis.report.verdict_head import verdict_head
from analysis.verdicts import Verdict

# What is known to differ from the paper's Linux 2.6.25 senders, independent of this run.
CODE_SINCE_2_6_25 = [
    "CUBIC gained HyStart (Linux 2.6.29, on by default), which leaves slow start before the first "
    "loss; the paper's `max_increment` parameter no longer exists (the paper set it so that it had no effect).",
    "Every algorithm's loss recovery changed: Proportional Rate Reduction (3.2) sets cwnd during fast "
    "recovery, RACK (Linux 4.4 onward, on by default) detects losses by time as well as by duplicate ACKs.",
    "The initial window is 10 segments (2.6.39) instead of 3.",
    "Linux `reno` is NewReno with SACK, as in 2.6.25; H-TCP is the kernel module with the paper's "
    "settings (adaptive backoff off, RTT scaling on).",
]


def _mean_cwnd(run: Run, cell_id: str) -> str:
    """Mean over trials of the flows' mean cwnd (per-flow metrics live in the trials' summaries)."""
    vals = []
    for trial in run.valid_trials(cell_id):
        path = trial / "summary.json"
        if path.exists():
            flows = [f["cwnd_mean"] for f in json.loads(path.read_text())["flows"] if f.get("cwnd_mean")]
            if flows:
                vals.append(sum(flows) / len(flows))
    return f"{sum(vals) / len(vals):.1f}" if vals else "-"


def trial_epochs(trial: Path) -> list[int]:
    """Congestion epochs (event to event) of each TCP flow of a trial, from its cwnd trace."""
    return [max(0, len(events) - 1) for events in modes.flow_events(trial) or ()]


def _epochs(run: Run) -> tuple[list[str], int]:
    """The paper's duration rule: at least 3 minutes or 20 congestion epochs, whichever is longer.
    Returns the cells whose flows saw fewer than 20 epochs, and the fewest any flow saw."""
    short, fewest = [], 1 << 30
    for cell_id in sorted(run.cells):
        counts = [n for t in run.valid_trials(cell_id) if (t / "tcp_probe.trace").exists() for n in trial_epochs(t)]
        if counts:
            fewest = min(fewest, min(counts))
            if min(counts) < 20:
                short.append(f"{cell_id}: {min(counts)} to {max(counts)} epochs per flow")
    return short, fewest


def verdicts(run: Run) -> list[Verdict]:
    return collateral.evaluate(run.cells, run.cfg, run.profile)


def render(run: Run, claims: list[Verdict]) -> str:
    facts = provenance_facts(run)
    out = verdict_head(run, claims, "Collateral Damage", f"Cells measured: {len(run.cells)} of "
                       f"{len(run.cfg.cells_by_id)} ({', '.join(sorted(run.cells)) or 'none'})")
    out += ["## What the paper leaves open, and what we chose", ""]
    out += choices_lines(run)
    out += ["", *claims_markdown.section(claims)]
    out += robustness_lines(run)
    beyond = next((v.verdict for v in claims if v.claim == "htcp_adaptive_backoff"), None)
    out += investigation.section(run, beyond)
    out += investigation_cubic.section(run)
    out += ["## Tables beside the paper", ""]
    for t in tables(run).values():
        out += [to_markdown(t), ""]
    out += _goodput_lines(run)
    out += _mechanism_lines(run)
    out += ["", "## What differs from the paper's testbed", "",
            "- Paper: Linux 2.6.25 senders at 1000 Hz, a FreeBSD 7.0 dummynet router, a hardware capture tap.",
            *this_run_lines(facts, "the bottleneck is HTB + bfifo (60000 bytes less the packet in transmission) "
                            "and netem, the one-way delay is measured from kernel timestamps of one shared clock.",
                            paper_hz=1000)]
    out += ["", "Known changes to the algorithms' code since 2.6.25:", ""]
    out += [f"- {line}" for line in CODE_SINCE_2_6_25]
    short, fewest = _epochs(run)
    out += ["", "## The paper's trial length rule", "",
            "The paper ran each trial for at least 3 minutes or 20 congestion epochs, whichever is "
            "longer. Epochs per TCP flow, from its cwnd trace (analysis/epochs.py):", ""]
    if short:
        out += [f"- {s}" for s in short]
    elif fewest < 1 << 30:
        out.append(f"- every flow of every valid trial: at least 20 (fewest: {fewest}).")
    return "\n".join(out) + "\n"


def _goodput_lines(run: Run) -> list[str]:
    """Table 1 beside itself: how much each algorithm's goodput grows from one flow to five, in the
    paper and here."""
    paper = (run.reference.get("tables") or {}).get("table1", {}).get("values", {})
    rows = []
    for rtt in RTTS:
        for cc in CCS:
            one, five = f"{cc}-rtt{rtt}-f1", f"{cc}-rtt{rtt}-f5"
            p = (paper[five][0] / paper[one][0] - 1) * 100 if one in paper and five in paper else None
            a, b = (run.cells.get(c, {}).get("metrics", {}).get("goodput_kbyte_s") for c in (one, five))
            ours = (b["mean"] / a["mean"] - 1) * 100 if a and b else None
            rows.append(f"| {rtt} ms | {collateral.cc_label(cc)} | {'-' if p is None else f'{p:+.2f}'} | "
                        f"{'-' if ours is None else f'{ours:+.2f}'} |")
    return ["## Goodput from one flow to five", "",
            "Aggregate goodput with five flows over that with one, in % (Table 1's means; ours trimmed), "
            "in the paper and in this run.", "",
            "| RTT | algorithm | paper | ours |", "|---|---|---|---|", *rows, ""]


def _mechanism_lines(run: Run) -> list[str]:
    """Per cell: queue, events, drops against retransmissions, cwnd, UDP loss and delay."""
    out = ["## Mechanism: what each cell's bottleneck and senders did", "",
           "Trimmed means over the valid trials. Queue: mean backlog of the 60000-byte buffer; "
           "events: queue-full events per minute (middle 60 s); drops: packets the forward queue dropped "
           "in the trial (TCP and UDP), beside the TCP packets retransmitted; cwnd: per-flow mean "
           "(packets); UDP lost: % of the UDP flow's packets.", "",
           "| cell | trials | queue (KB) | events/min | drops | retransmitted | cwnd | UDP lost (%) "
           "| UDP OWD median (ms) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for cell_id, cell in sorted(run.cells.items()):
        def v(metric: str, scale: float = 1.0, digits: int = 1, c: dict[str, Any] = cell) -> str:
            agg = c.get("metrics", {}).get(metric)
            return f"{agg['mean'] * scale:.{digits}f}" if agg else "-"
        out.append(f"| {cell_id} | {cell.get('n_valid', 0)} | {v('q_forward_backlog_bytes_mean', 1e-3)} | "
                   f"{v('q_forward_full_events_per_min')} | {v('q_forward_drops', digits=0)} | "
                   f"{v('rexmt_data_pkts', digits=0)} | {_mean_cwnd(run, cell_id)} | "
                   f"{v('voip_loss_frac', 100, 3)} | {v('owd_median_ms')} |")
    return out


def write(run: Run) -> list[Path]:
    claims = verdicts(run)
    return write_verdict(run, claims, render(run, claims))
