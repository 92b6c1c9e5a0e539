"""Tables 1 and 2: the measured cells beside the paper's values (CSV, Markdown, LaTeX)."""
from __future__ import annotations

from pathlib import Path

from analysis.collateral.run import Run
from analysis.paper_tables import Table, build_table, write_table


def tables(run: Run) -> dict[str, Table]:
    specs = run.cfg.data["reference"]["tables"]
    return {tid: build_table(tid, spec, run.cells, run.params) for tid, spec in specs.items()}


def write(run: Run) -> list[Path]:
    return [p for t in tables(run).values() for p in write_table(t, run.out)]
