"""`python -m figures.westwood --profile P`: every figure, table and verdict of the report from
results/<P>/westwood into figures/westwood/<P>/ (cells not run are shown as missing)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from figures import provenance
from figures.westwood import fig1_probe_listing, fig5_10_cwnd, fig11_mismatch, sweeps, table, verdict
from figures.westwood.common import Run
from tcprepro import CHECKOUT

PARTS = [table, fig1_probe_listing, fig5_10_cwnd, fig11_mismatch, sweeps, verdict, provenance]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m figures.westwood", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--results", type=Path, help="default: results/<profile>/westwood")
    ap.add_argument("--out", type=Path, help="default: figures/westwood/<profile>")
    a = ap.parse_args(argv)
    results = a.results or CHECKOUT / "results" / a.profile / "westwood"
    if not results.is_dir():
        print(f"error: no results in {results}: run the workflow first (make quick)", file=sys.stderr)
        return 2
    run = Run.load(a.profile, results, a.out or CHECKOUT / "figures" / "westwood" / a.profile)
    for part in PARTS:
        written = part.main(run)
        name = part.__name__.rsplit(".", 1)[-1]
        print(f"{name}: " + (", ".join(p.name for p in written) if written else "nothing to draw (cells not run)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
