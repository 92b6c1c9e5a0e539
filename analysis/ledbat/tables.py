"""Tables: completion times beside the paper's (the profile's own cells), and beyond the paper,
Jain's index, link utilisation and mean sum rate per variant and load (CSV, Markdown, LaTeX)."""
from __future__ import annotations

from pathlib import Path

from analysis.ledbat.run import Run
from analysis.paper_tables import Row, Table, build_table, cell_value, write_table


def completion(run: Run) -> Table:
    spec = run.reference["tables"]["completion"]
    mine = set(run.profile_cells())
    values = {cid: v for cid, v in spec["values"].items() if cid in mine}
    params = {cid: {"cc": p["cc"], "case": p["case"]} for cid, p in run.params.items()}
    return build_table("completion", {**spec, "values": values}, run.cells, params)


def summary(run: Run) -> Table:
    """One row per LEDBAT-only cell of the profile: what the paper argues about but does not tabulate."""
    spec = run.reference["tables"]["summary"]
    t = build_table("summary", {**spec, "values": {}}, run.cells, run.params)
    for cid in run.profile_cells():
        p = run.params[cid]
        if int(p["n_cross"]):
            continue
        cell = run.cells.get(cid)
        row = Row(cid, {k: p[k] for k in ("cc", "case")}, int(cell.get("n_valid", 0)) if cell else 0,
                  cell.get("expected_trials") if cell else None)
        for col in t.columns:
            row.measured[col.name] = cell_value(cell, col.metric, col.stat)
            row.paper[col.name] = None
        t.rows.append(row)
    return t


def tables(run: Run) -> dict[str, Table]:
    return {"completion": completion(run), "summary": summary(run)}


def summary_markdown(t: Table) -> str:
    """The summary with three decimals (compare.to_markdown takes its digits from paper values,
    and this table has none)."""
    head = ["cc", "case", "trials", *[f"{c.name} ({c.unit})" if c.unit else c.name for c in t.columns]]
    lines = [f"**{t.title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in t.rows:
        vals = [f"{v:.3f}" if (v := r.measured[c.name]) is not None else "-" for c in t.columns]
        lines.append("| " + " | ".join([r.params["cc"], r.params["case"], f"{r.n_valid}/{r.expected or '-'}", *vals])
                     + " |")
    return "\n".join(lines) + "\n"


def write(run: Run) -> list[Path]:
    written = []
    for t in tables(run).values():
        written += write_table(t, run.out)
        if t.table_id == "summary":
            (run.out / "summary.md").write_text(summary_markdown(t))
    return written
