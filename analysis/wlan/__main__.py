"""`python -m analysis.wlan --profile P`: every table, figure and verdict of the paper from
results/<P>/wlan into figures/wlan/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import sys

from analysis.report import provenance
from analysis.report.paper_run import figures_main
from analysis.wlan import (
    investigation,
    investigation_channel,
    investigation_idle,
    investigation_streams,
    plots,
    tables,
    verdict,
)
from analysis.wlan.run import Run

PARTS = [tables.write, plots.fig1_testbed, plots.curves, plots.fig5_scheduler, plots.beyond,
         investigation.fig_dl1ul1, investigation_idle.fig_idle, investigation_channel.fig_mt2,
         investigation_streams.fig_streams, verdict.write, provenance.write]


def main(argv: list[str] | None = None) -> int:
    return figures_main("wlan", Run.load, PARTS, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
