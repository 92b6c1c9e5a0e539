"""`python -m analysis.collateral --profile P`: every table, figure and verdict of the paper from
results/<P>/collateral into figures/collateral/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import sys

from analysis.collateral import investigation, investigation_cubic, plots, tables, verdict
from analysis.collateral.run import Run
from analysis.report import provenance
from analysis.report.paper_run import figures_main

PARTS = [tables.write, plots.tables_vs_paper, plots.fig1_testbed, plots.fig2_epochs, plots.fig3_owd_cdf,
         plots.fig4_queue_full, plots.fig5_retransmissions, investigation.fig_htcp_backoff,
         investigation_cubic.fig_cubic_step, verdict.write,
         provenance.write]


def main(argv: list[str] | None = None) -> int:
    return figures_main("collateral", Run.load, PARTS, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
