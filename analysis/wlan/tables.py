"""Tables: the dl1-ul1, M_t = 1 numbers beside the paper's (CSV, Markdown, LaTeX), and the AP's
queues per scheduler cell at Q = 100 (what the classifier put where, what the WRR served)."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from analysis.paper_tables import Table, build_table, cell_value, write_table
from analysis.wlan.run import Run

QUEUE_COLUMNS = ("ap_q1_enq_data", "ap_q1_enq_ack", "ap_q1_enq_other", "ap_q2_enq_data", "ap_q2_enq_ack",
                 "ap_q1_deq_data", "ap_q2_deq_ack", "ap_q1_drop_data", "ap_q2_drop_ack", "ap_ack_share")


def tables(run: Run) -> dict[str, Table]:
    return {tid: build_table(tid, spec, run.cells, run.params) for tid, spec in run.reference["tables"].items()}


def queue_rows(run: Run) -> list[dict[str, object]]:
    rows = []
    for cell_id, p in run.params.items():
        cell = run.cells.get(cell_id)
        if not cell or p["sched"] == "fifo" or int(p["q"]) != 100:
            continue
        row: dict[str, object] = {"cell": cell_id, "trials": cell.get("n_valid", 0)}
        for col in QUEUE_COLUMNS:
            v = cell_value(cell, col, "mean")
            row[col] = "" if v is None else (f"{v:.3f}" if col == "ap_ack_share" else f"{v:.0f}")
        rows.append(row)
    return rows


def write_queues(run: Run) -> list[Path]:
    rows = queue_rows(run)
    if not rows:
        return []
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    csv_path = run.out / "scheduler_queues.csv"
    csv_path.write_text(buf.getvalue())
    head = ["cell", "trials", *QUEUE_COLUMNS]
    md = ["**The AP's queues with the DATA/ACK and adaptive schedulers, Q = 100 (packets in the metric window, "
          "trimmed mean over trials)**", "",
          "q1 = DATA queue, q2 = ACK queue; enq/deq/drop = enqueued/served/dropped; ap_ack_share = ACKs among "
          "the packets the AP served (the WRR's 1/3 when both queues are backlogged).", "",
          "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(str(r[h]) for h in head) + " |" for r in rows]
    md_path = run.out / "scheduler_queues.md"
    md_path.write_text("\n".join(md) + "\n")
    return [csv_path, md_path]


def write(run: Run) -> list[Path]:
    return [p for t in tables(run).values() for p in write_table(t, run.out)] + write_queues(run)
