"""`python -m analysis.westwood --profile P`: every table, figure and verdict of the paper from
results/<P>/westwood into figures/westwood/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import sys

from analysis.report import provenance
from analysis.report.paper_run import figures_main
from analysis.westwood import investigation, investigation_base_delay, plots, tables, verdict
from analysis.westwood.run import Run

PARTS = [tables.write, plots.fig1_probe_listing, plots.fig4_testbed, plots.fig5_10_cwnd, plots.fig11_mismatch,
         plots.sweeps, investigation.fig_test2, investigation_base_delay.fig_test3, verdict.write, provenance.write]


def main(argv: list[str] | None = None) -> int:
    return figures_main("westwood", Run.load, PARTS, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
