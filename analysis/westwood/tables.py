"""The throughput table: ours beside the report's (CSV, Markdown, LaTeX)."""
from __future__ import annotations

from pathlib import Path

from analysis.paper_tables import Table, build_table, write_table
from analysis.westwood.run import Run


def tables(run: Run) -> dict[str, Table]:
    specs = run.reference["tables"]
    return {tid: build_table(tid, spec, run.cells, run.params) for tid, spec in specs.items()}


def write(run: Run) -> list[Path]:
    return [p for t in tables(run).values() for p in write_table(t, run.out)]
