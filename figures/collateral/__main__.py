"""`python -m figures.collateral --profile P`: every table, figure and verdict of the paper from
results/<P>/collateral into figures/collateral/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
from tcprepro import CHECKOUT

PARTS = [tables, vs_paper, fig1_testbed, fig2_epochs, fig3_owd_cdf, fig4_queue_full, fig5_retransmissions, verdict,
         provenance]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m figures.collateral", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--results", type=Path, help="default: results/<profile>/collateral")
    ap.add_argument("--out", type=Path, help="default: figures/collateral/<profile>")
    a = ap.parse_args(argv)
    results = a.results or CHECKOUT / "results" / a.profile / "collateral"
    if not results.is_dir():
        print(f"error: no results in {results}: run the workflow first (make quick)", file=sys.stderr)
        return 2
    run = Run.load(a.profile, results, a.out or CHECKOUT / "figures" / "collateral" / a.profile)
    for part in PARTS:
        written = part.main(run)
        name = part.__name__.rsplit(".", 1)[-1]
        print(f"{name}: " + (", ".join(p.name for p in written) if written else "nothing to draw (cells not run)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
