"""`python -m figures.westwood --profile P`: every figure, table and verdict of the report from
results/<P>/westwood into figures/westwood/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import sys

from figures import provenance
from figures.common import figures_main
from figures.westwood import fig1_probe_listing, fig5_10_cwnd, fig11_mismatch, sweeps, table, verdict
from figures.westwood.common import Run

PARTS = [table, fig1_probe_listing, fig5_10_cwnd, fig11_mismatch, sweeps, verdict, provenance]


def main(argv: list[str] | None = None) -> int:
    return figures_main("westwood", Run.load, PARTS, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
