"""`python -m analysis.crossval snapshot ...` records a lane's cells; `python -m analysis.crossval draw`
compares the snapshots into figures/crossval/ (analysis/crossval/metrics.py, plots.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from analysis.crossval import metrics as crossval
from analysis.crossval import plots
from configuration import CHECKOUT


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis.crossval",
                                description="The virtual-time lane against the QEMU TCG lane, cell by cell.")
    sub = p.add_subparsers(dest="action", required=True)
    s = sub.add_parser("snapshot", help="a lane's cell aggregates of one paper into data/crossval/<lane>/<paper>.json")
    s.add_argument("--lane", required=True, choices=sorted(crossval.config()["runs"]),
                   help="which run (config/crossval.yaml)")
    s.add_argument("--paper", required=True, choices=sorted(crossval.config()["papers"]))
    s.add_argument("--results", type=Path, help="the paper's result folder (<results>/<profile>/<paper>)")
    s.add_argument("--tables", type=Path, help="Collateral Damage only: a figures folder holding table1/2.csv")
    s.add_argument("--merge", action="store_true",
                   help="keep the existing snapshot's cells that this results folder does not hold")
    d = sub.add_parser("draw", help="every comparison config/crossval.yaml lists into crossval.md, .csv and .png")
    d.add_argument("--out", type=Path, default=CHECKOUT / "figures" / "crossval", help="default: figures/crossval")
    args = p.parse_args(argv)
    if args.action == "draw":
        plots.write(args.out)
        return 0
    if args.tables:
        snap = crossval.snapshot_collateral_tables(args.tables)
    elif args.results:
        snap = crossval.snapshot(args.lane, args.paper, args.results)
    else:
        p.error("give --results (trials) or --tables (Collateral Damage's tables)")
    old = crossval.load_snapshot(args.lane, args.paper) if args.merge else None
    if old is not None:
        snap = crossval.merge_snapshots(old, snap)
    print(crossval.write_snapshot(snap), f"{len(snap['cells'])} cells", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
