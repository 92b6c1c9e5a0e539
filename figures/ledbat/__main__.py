"""`python -m figures.ledbat --profile P`: every figure, table and verdict of the LEDBAT paper from
results/<P>/ledbat into figures/ledbat/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import sys

from figures import provenance
from figures.common import figures_main
from figures.ledbat import fig5_sweep, table, timeseries, verdict
from figures.ledbat.common import Run

PARTS = [table, timeseries, fig5_sweep, verdict, provenance]


def main(argv: list[str] | None = None) -> int:
    return figures_main("ledbat", Run.load, PARTS, __doc__, argv)


if __name__ == "__main__":
    sys.exit(main())
