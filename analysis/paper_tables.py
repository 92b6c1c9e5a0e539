"""A paper's reference tables beside the measured cells: measured, paper, difference.

The paper's numbers live once in `config/<paper>.yaml` under `reference.tables`; each table names,
per column, which per-trial metric of the cell and which trimmed statistic of it (`mean` of the
kept trials, or their `std`) the paper's number is compared with. Cells that were not run, or
that have no valid trial, appear with an empty measurement rather than vanishing from the table.
"""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Column:
    name: str
    metric: str
    stat: str
    unit: str = ""


@dataclass
class Row:
    cell: str
    params: dict[str, Any]
    n_valid: int
    expected: int | None
    measured: dict[str, float | None] = field(default_factory=dict)
    paper: dict[str, float | None] = field(default_factory=dict)

    def diff(self, col: str) -> float | None:
        m, p = self.measured.get(col), self.paper.get(col)
        return None if m is None or p is None else m - p

    def diff_pct(self, col: str) -> float | None:
        d, p = self.diff(col), self.paper.get(col)
        return None if d is None or not p else 100.0 * d / p


@dataclass
class Table:
    table_id: str
    title: str
    columns: list[Column]
    rows: list[Row]


def load_cells(cells_root: Path) -> dict[str, dict[str, Any]]:
    """{cell_id: cell.json} for every aggregated cell under results/<profile>/<paper>/."""
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(Path(cells_root).glob("*/cell.json"))}


def cell_value(cell: dict[str, Any] | None, metric: str, stat: str) -> float | None:
    """A cell's trimmed statistic of one metric, None when the cell or metric is absent."""
    if not cell:
        return None
    agg = cell.get("metrics", {}).get(metric)
    v = agg.get(stat) if agg else None
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def build_table(table_id: str, spec: dict[str, Any], cells: dict[str, dict[str, Any]],
                params: dict[str, dict[str, Any]]) -> Table:
    """`spec` is reference.tables.<table_id>; `params` maps cell id to its matrix parameters, of
    which a row shows those `spec["keys"]` names (the paper's axes; default all)."""
    cols = [Column(name, c["metric"], c["stat"], c.get("unit", "")) for name, c in spec["columns"].items()]
    keys = spec.get("keys")
    rows = []
    for cell_id, values in spec["values"].items():
        cell = cells.get(cell_id)
        shown = {k: v for k, v in params.get(cell_id, {}).items() if keys is None or k in keys}
        row = Row(cell_id, shown, int(cell.get("n_valid", 0)) if cell else 0,
                  cell.get("expected_trials") if cell else None)
        for col, paper_value in zip(cols, values, strict=True):
            row.paper[col.name] = None if paper_value is None else float(paper_value)
            row.measured[col.name] = cell_value(cell, col.metric, col.stat)
        rows.append(row)
    return Table(table_id, spec.get("title", table_id), cols, rows)


def _fmt(v: float | None, digits: int = 2) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def _param_names(table: Table) -> list[str]:
    names: list[str] = []
    for r in table.rows:
        names.extend(k for k in r.params if k not in names)
    return names


def to_csv(table: Table) -> str:
    """Long form: one line per cell, measured, paper and difference per column."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    pnames = _param_names(table)
    head = ["cell", *pnames, "n_valid"]
    for c in table.columns:
        head += [f"{c.name}_measured", f"{c.name}_paper", f"{c.name}_diff", f"{c.name}_diff_pct"]
    w.writerow(head)
    for r in table.rows:
        line = [r.cell, *[r.params.get(k, "") for k in pnames], r.n_valid]
        for c in table.columns:
            line += [_fmt(r.measured[c.name], 4), _fmt(r.paper[c.name], 4), _fmt(r.diff(c.name), 4),
                     _fmt(r.diff_pct(c.name), 2)]
        w.writerow(line)
    return buf.getvalue()


def _digits(table: Table, col: str) -> int:
    """As many decimals as the paper printed in this column (at least one)."""
    decimals = [len(f"{v:g}".partition(".")[2]) for r in table.rows if (v := r.paper.get(col)) is not None]
    return max([1, *decimals])


def to_markdown(table: Table) -> str:
    """One row per cell; each column as measured, paper's value and difference."""
    pnames = _param_names(table)
    head = [*pnames, "trials"]
    for c in table.columns:
        unit = f" ({c.unit})" if c.unit else ""
        head += [f"{c.name}{unit}", "paper", "diff"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table.rows:
        trials = f"{r.n_valid}/{r.expected}" if r.expected else "not run"
        cells = [str(r.params.get(k, "")) for k in pnames] + [trials]
        for c in table.columns:
            d, digits = r.diff(c.name), _digits(table, c.name)
            cells += [_fmt(r.measured[c.name], digits) or "-", _fmt(r.paper[c.name], digits),
                      "" if d is None else f"{d:+.{digits}f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return f"**{table.title}**\n\n" + "\n".join(lines) + "\n"


def to_latex(table: Table) -> str:
    """booktabs tabular: measured value with the paper's in parentheses."""
    pnames = _param_names(table)
    spec = "l" * len(pnames) + "r" * len(table.columns)
    out = [f"% {table.title}", f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
           " & ".join([*pnames, *[c.name for c in table.columns]]) + " \\\\", "\\midrule"]
    for r in table.rows:
        vals = [str(r.params.get(k, "")) for k in pnames]
        for c in table.columns:
            m, p, digits = r.measured[c.name], r.paper[c.name], _digits(table, c.name)
            vals.append(f"{_fmt(m, digits) or '--'} ({_fmt(p, digits)})")
        out.append(" & ".join(vals) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}", ""]
    return "\n".join(out)


def write_table(table: Table, out_dir: Path) -> list[Path]:
    """<out_dir>/<table_id>.{csv,md,tex}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for ext, text in (("csv", to_csv(table)), ("md", to_markdown(table)), ("tex", to_latex(table))):
        path = out_dir / f"{table.table_id}.{ext}"
        path.write_text(text)
        written.append(path)
    return written
