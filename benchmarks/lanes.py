"""Wall time per trial on the virtual-time lane (UML) against the QEMU TCG lane, side by side.

    python -m benchmarks.lanes                 # one 180-s Collateral Damage and one 120-s Westwood+ trial per lane
    python -m benchmarks.lanes --matrix        # and the whole Collateral Damage matrix (90 trials) on UML

Each trial is the workflow's own (`tcprepro trial`, full profile, trial 1) written under
results/bench/ and removed afterwards; the lanes run one after the other, never at once (the QEMU
lane's timing is spoiled by other load, the UML lane's is not). What it prints is a measurement of
this machine, for docs/measurements.md; nothing here asserts a speed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

from configuration import CHECKOUT

CELLS = (("collateral", "htcp-rtt50-f1"), ("westwood", "westwood-t1"))
LANES = ("uml", "vm")
BENCH = CHECKOUT / "results" / "bench"        # the VM shares only folders below results/


def run_trial(paper: str, cell: str, lane: str) -> dict[str, object]:
    out = BENCH / lane / paper / cell / "trial-1"
    shutil.rmtree(out.parent, ignore_errors=True)
    env = dict(os.environ, TCPREPRO_KERNEL=lane)
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "tcprepro", "trial", "--paper", paper, "--cell", cell,
                           "--trial", "1", "--profile", "full", "--out", str(out), "--max-attempts", "1"],
                          env=env, capture_output=True, text=True, cwd=CHECKOUT)
    wall = time.monotonic() - t0
    row: dict[str, object] = {"paper": paper, "cell": cell, "lane": lane, "wall_s": round(wall, 1),
                              "exit": proc.returncode}
    if proc.returncode == 0:
        summary = json.loads((out / "summary.json").read_text())
        prov = json.loads((out / "provenance.json").read_text())
        k = prov["kernel"]
        where = k["where"] + (f"/{k['accel']}" if k["accel"] else "")
        row |= {"valid": summary["valid"], "kernel": f"{k['release']} ({where})",
                "goodput_kbit_s": round(summary["metrics"].get("goodput_kbit_s", float("nan")), 1)}
    else:
        row["error"] = proc.stderr.strip().splitlines()[-1:] if proc.stderr else ""
    shutil.rmtree(out.parent, ignore_errors=True)
    return row


def run_matrix() -> dict[str, object]:
    """The Collateral Damage matrix (18 cells x 5 trials of 180 s) on UML, one trial per core."""
    results = BENCH / "matrix"
    shutil.rmtree(results, ignore_errors=True)
    env = dict(os.environ, TCPREPRO_KERNEL="uml")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "all", "--config", "profile=full",
                           "papers=[collateral]", f"results={results.relative_to(CHECKOUT)}",
                           f"figures={results / 'figures'}"], env=env, capture_output=True, text=True, cwd=CHECKOUT)
    wall = time.monotonic() - t0
    trials = list(results.glob("full/collateral/*/trial-*/summary.json"))
    valid = sum(json.loads(p.read_text())["valid"] for p in trials)
    shutil.rmtree(results, ignore_errors=True)
    return {"matrix": "collateral full (18 cells x 5 trials of 180 s)", "lane": "uml", "cores": os.cpu_count(),
            "wall_min": round(wall / 60, 1), "trials": len(trials), "valid": valid, "exit": proc.returncode}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.lanes", description=__doc__.split("\n")[0])
    p.add_argument("--matrix", action="store_true", help="also time the whole Collateral Damage matrix on UML")
    p.add_argument("--lanes", default=",".join(LANES), help="which lanes (default: uml,vm)")
    args = p.parse_args(argv)
    print(f"# {platform.node()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at the start")
    rows = [run_trial(paper, cell, lane) for paper, cell in CELLS for lane in args.lanes.split(",")]
    print("| paper | cell | lane | kernel | wall per trial (s) | valid | goodput (kbit/s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['paper']} | {r['cell']} | {r['lane']} | {r.get('kernel', r.get('error'))} | {r['wall_s']} | "
              f"{r.get('valid')} | {r.get('goodput_kbit_s')} |")
    if args.matrix:
        m = run_matrix()
        print(f"\n{m['matrix']} on {m['lane']}, {m['cores']} cores: {m['wall_min']} min, "
              f"{m['valid']} of {m['trials']} trials valid (exit {m['exit']})")
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
