"""`python -m figures.wlan --profile P`: every figure, table and verdict of the 802.11b paper from
results/<P>/wlan into figures/wlan/<P>/ (cells not run are left out of the curves)."""
from __future__ import annotations

import sys

from figures import provenance
from figures.common import figures_main
from figures.wlan import beyond, curves, fig1_testbed, fig5_scheduler, table, verdict
from figures.wlan.common import Run

PARTS = [table, fig1_testbed, curves, fig5_scheduler, beyond, verdict, provenance]


def main(argv: list[str] | None = None) -> int:
    return figures_main("wlan", Run.load, PARTS, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
