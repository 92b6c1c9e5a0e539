"""`python -m figures.collateral --profile P`: every table, figure and verdict of the paper from
results/<P>/collateral into figures/collateral/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import sys

from figures import provenance
from figures.collateral import (
    fig1_testbed,
    fig2_epochs,
    fig3_owd_cdf,
    fig4_queue_full,
    fig5_retransmissions,
    tables,
    verdict,
    vs_paper,
)
from figures.collateral.common import Run
from figures.common import figures_main

PARTS = [tables, vs_paper, fig1_testbed, fig2_epochs, fig3_owd_cdf, fig4_queue_full, fig5_retransmissions, verdict,
         provenance]


def main(argv: list[str] | None = None) -> int:
    return figures_main("collateral", Run.load, PARTS, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
