"""`python -m analysis.ledbat --profile P`: every table, figure and verdict of the paper from
results/<P>/ledbat into figures/ledbat/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import sys

from analysis.ledbat import investigation_arrivals, investigation_delack, plots, tables, verdict
from analysis.ledbat.run import Run
from analysis.report import provenance
from analysis.report.paper_run import figures_main

PARTS = [tables.write, plots.timeseries, plots.fig5_sweep, investigation_delack.fig_delack,
         investigation_arrivals.fig_arrivals, verdict.write, provenance.write]


def main(argv: list[str] | None = None) -> int:
    return figures_main("ledbat", Run.load, PARTS, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
