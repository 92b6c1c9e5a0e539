"""What a trial costs the host: CPU per data packet and per virtual second on the virtual-time lane,
and wall time per simulated 802.11b run.

    python -m benchmarks.per_packet                    # this checkout
    python -m benchmarks.per_packet --against REV      # and the commit REV, side by side
    python -m benchmarks.per_packet --no-wlan          # the virtual-time lane only

The virtual-time lane runs benchmarks/papers/perpacket.yaml: one bulk flow at 1, 10 and 20 Mbit/s,
each for 10 and 70 virtual seconds, one trial after the other (`tcprepro trial`, as the workflow
runs it). A trial's host CPU is the user and system time of its whole process tree (the runner,
the UML kernel and the host processes that carry the guest's address spaces), read from the
kernel's accounting when the runner exits; its data packets are tcptrace's count of the sender's
data segments. The two lengths at one rate cancel what does not grow with the trial (boot, set-up,
analysis): CPU per virtual second at that rate, and per data packet (the difference in CPU over the
difference in packets). A line through the three rates (CPU per virtual second against packets
per virtual second) splits that into a cost per packet and a cost per virtual second with no
traffic. On this lane CPU time does not depend on the machine's other load; wall time does, and is
printed beside it.

The 802.11b model (ns-3) is timed on one full-profile run of a cell of config/wlan.yaml.

With --against, REV is checked out in a temporary git worktree that shares this checkout's UML
kernel build (the same kernel when its definition did not change) and measured the same way, each
trial on REV and then on this checkout, round after round. The CPU the hypervisor took from this
machine while a trial ran (steal time, /proc/stat) is printed beside it: where it is not small, the
machine was shared and the figures are upper bounds. What it prints is a measurement of this
machine for docs/measurements.md; nothing here asserts a speed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from configuration import CHECKOUT

PAPER = "perpacket"
RATES_KBIT = (1000, 10000, 20000)
SECONDS = (10, 70)
REPEATS = 3                     # each trial's CPU is the least of this many runs
WLAN_CELL = "dl2-ul2-fifo-q100-mt4"
WLAN_MODEL = "wlan_dcf"
DATA_PKTS = re.compile(r"actual data pkts:\s+(\d+)")


@dataclass
class Run:
    """One trial: its host CPU (user + system of the process tree), wall time and data packets."""

    cell: str
    cpu_s: float
    wall_s: float
    lane_cpu_s: float | None        # the UML process tree alone (provenance virtual_time.host_cpu_s)
    data_pkts: int
    virtual_s: float
    ok: bool
    error: str = ""
    steal_s: float = 0.0


def steal_s() -> float:
    """The CPU time the hypervisor has taken from this machine since boot (all CPUs), in seconds."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def run_trial(checkout: Path, paper: str, cell: str, results: Path, env: dict[str, str]) -> Run:
    """`tcprepro trial` of trial 1 of `cell` in `checkout`, its folder removed afterwards."""
    out = results / paper / cell / "trial-1"
    shutil.rmtree(out.parent, ignore_errors=True)
    argv = [sys.executable, "-m", "tcprepro", "trial", "--paper", paper, "--cell", cell, "--trial", "1",
            "--profile", "full", "--out", str(out), "--max-attempts", "1"]
    t0, stolen = time.monotonic(), steal_s()
    proc = subprocess.Popen(argv, cwd=checkout, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall, stolen = time.monotonic() - t0, steal_s() - stolen
    cpu = usage.ru_utime + usage.ru_stime
    pkts, virtual, lane_cpu = 0, 0.0, None
    if proc.returncode == 0:
        for trace in out.glob("tcptrace-*.txt"):
            found = DATA_PKTS.search(trace.read_text())
            pkts += int(found.group(1)) if found else 0
        prov = json.loads((out / "provenance.json").read_text())
        virtual = float((prov.get("virtual_time") or {}).get("virtual_s") or 0.0)
        lane_cpu = (prov.get("virtual_time") or {}).get("host_cpu_s")
    shutil.rmtree(out.parent, ignore_errors=True)
    error = "" if proc.returncode == 0 else (stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    return Run(cell, round(cpu, 2), round(wall, 2), lane_cpu, pkts, virtual, proc.returncode == 0, error,
               round(stolen, 2))


@dataclass
class Rate:
    """One rate's two trials reduced to what grows with the trial."""

    rate_kbit: int
    cpu_per_virtual_s: float
    pkts_per_virtual_s: float
    ms_per_pkt: float
    wall_per_virtual_s: float


def per_rate(runs: dict[str, Run]) -> list[Rate]:
    out = []
    short, long_ = SECONDS
    for rate in RATES_KBIT:
        a, b = runs[f"r{rate}-t{short}"], runs[f"r{rate}-t{long_}"]
        if not (a.ok and b.ok) or b.data_pkts <= a.data_pkts:
            continue
        span = long_ - short
        out.append(Rate(rate, (b.cpu_s - a.cpu_s) / span, (b.data_pkts - a.data_pkts) / span,
                        1000 * (b.cpu_s - a.cpu_s) / (b.data_pkts - a.data_pkts), (b.wall_s - a.wall_s) / span))
    return out


def split(rates: list[Rate]) -> tuple[float, float] | None:
    """(ms per data packet, ms per virtual second without traffic): the least-squares line of CPU per
    virtual second against packets per virtual second over the rates."""
    if len(rates) < 2:
        return None
    xs, ys = [r.pkts_per_virtual_s for r in rates], [r.cpu_per_virtual_s for r in rates]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return 1000 * slope, 1000 * (my - slope * mx)


def least_run(runs: list[Run]) -> Run:
    """The run of least CPU: other load on a shared machine only ever adds to a trial's CPU (a
    trial's packets are the same in every run: virtual time is exact), so the least-disturbed run
    is the best estimate of its cost."""
    ok = sorted((r for r in runs if r.ok), key=lambda r: r.cpu_s)
    return ok[0] if len(ok) == len(runs) else next(r for r in runs if not r.ok)


@dataclass
class Side:
    """One checkout's measurements: the least-disturbed run of each trial."""

    name: str
    runs: dict[str, Run]
    wlan: Run | None
    repeats: int = REPEATS

    def table(self) -> list[Rate]:
        return per_rate(self.runs)


def measure(checkouts: list[tuple[str, Path]], wlan: bool, repeats: int) -> list[Side]:
    """Every trial on every checkout, `repeats` rounds. Within a round each trial runs on one
    checkout, then the next (A, B, A, B): a shared machine's speed drifts over minutes (this
    project's build machine, a VM, has given the same trial from 10 to 25 s of CPU in one hour),
    and the interleaving spreads the drift over both sides instead of favouring one. The benchmark's
    paper is this checkout's for every side: the input stays, the code varies."""
    env = dict(os.environ, TCPREPRO_KERNEL="uml", TCPREPRO_PAPER_DIR=str(CHECKOUT / "benchmarks" / "papers"))
    env.pop("TCPREPRO_PLACED", None)
    sim_env = {k: v for k, v in os.environ.items() if k not in ("TCPREPRO_PAPER_DIR", "TCPREPRO_PLACED")}
    cells = [f"r{r}-t{s}" for r in RATES_KBIT for s in SECONDS]
    runs: dict[str, dict[str, list[Run]]] = {name: {c: [] for c in [*cells, WLAN_CELL]} for name, _ in checkouts}
    if wlan:        # built first (sim/build.py reuses a current build), so a run times the simulation
        for _, path in checkouts:
            subprocess.run([sys.executable, "-m", "sim.build", WLAN_MODEL], cwd=path, env=sim_env, check=True,
                           stdout=subprocess.DEVNULL)
    for k in range(repeats):
        print(f"round {k + 1} of {repeats} ...", file=sys.stderr, flush=True)
        for cell in cells:
            for name, path in checkouts:
                # under each checkout's results/: the folder its trials may write
                runs[name][cell].append(run_trial(path, PAPER, cell, path / "results" / "bench", env))
        for name, path in checkouts if wlan else []:
            runs[name][WLAN_CELL].append(run_trial(path, "wlan", WLAN_CELL, path / "results" / "bench", sim_env))
    return [Side(name, {c: least_run(runs[name][c]) for c in cells},
                 least_run(runs[name][WLAN_CELL]) if wlan else None, repeats) for name, _ in checkouts]


@dataclass
class Worktree:
    path: Path

    @classmethod
    def of(cls, rev: str) -> Worktree:
        path = Path(tempfile.mkdtemp(prefix="tcprepro-bench-"))
        path.chmod(0o755)            # the UML guest's user reads the checkout (docs/uml.md, "Privilege")
        subprocess.run(["git", "-C", str(CHECKOUT), "worktree", "add", "--quiet", "--detach", str(path), rev],
                       check=True, stdout=subprocess.DEVNULL)
        return cls(path)

    def remove(self) -> None:
        subprocess.run(["git", "-C", str(CHECKOUT), "worktree", "remove", "--force", str(self.path)], check=False)
        shutil.rmtree(self.path, ignore_errors=True)


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def report(sides: list[Side]) -> str:
    lines = [f"# {platform.node()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; "
             f"one trial at a time, least of "
             f"{sides[0].repeats if sides else REPEATS} runs; CPU = user + system of the trial's process tree", "",
             "| checkout | rate (Mbit/s) | data pkts per virtual s | host CPU per virtual s (s) | "
             "host CPU per data packet (ms) | wall per virtual s (s) |", "|---|---|---|---|---|---|"]
    for side in sides:
        for r in side.table():
            lines.append(f"| {side.name} | {r.rate_kbit / 1000:g} | {r.pkts_per_virtual_s:.0f} | "
                         f"{r.cpu_per_virtual_s:.3f} | {r.ms_per_pkt:.3f} | {r.wall_per_virtual_s:.3f} |")
    lines += ["", "| checkout | per data packet (ms) | per virtual second without traffic (ms) |", "|---|---|---|"]
    for side in sides:
        fit = split(side.table())
        lines.append(f"| {side.name} | {_fmt(fit and fit[0])} | {_fmt(fit and fit[1], 1)} |")
    lines += ["", "| checkout | trial | host CPU (s) | of it the UML processes (s) | wall (s) | steal (s) | data pkts "
              "| ok |", "|---|---|---|---|---|---|---|---|"]
    for side in sides:
        for run in [*side.runs.values(), *([side.wlan] if side.wlan else [])]:
            lines.append(f"| {side.name} | {run.cell} | {run.cpu_s} | {_fmt(run.lane_cpu_s, 2)} | {run.wall_s} | "
                         f"{run.steal_s} | {run.data_pkts} | "
                         f"{'yes' if run.ok else run.error} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.per_packet", description=__doc__.split("\n")[0])
    p.add_argument("--against", metavar="REV", help="also measure this commit, in a temporary worktree, interleaved")
    p.add_argument("--no-wlan", action="store_true", help="skip the 802.11b model's run")
    p.add_argument("--repeats", type=int, default=REPEATS,
                   help=f"runs of each trial, the least CPU counts (default {REPEATS})")
    p.add_argument("--json", type=Path, default=CHECKOUT / "results" / "bench" / "per_packet.json",
                   help="where the measurements go (default: results/bench/per_packet.json)")
    args = p.parse_args(argv)
    tree = Worktree.of(args.against) if args.against else None
    # The UML kernel of this checkout's build folder, shared: a worktree builds it only when its
    # kernel definition differs.
    os.environ.setdefault("TCPREPRO_UML_BUILD", str(CHECKOUT / "build" / "uml"))
    try:
        sides = measure([*([(args.against, tree.path)] if tree else []), ("this checkout", CHECKOUT)],
                        not args.no_wlan, args.repeats)
    finally:
        if tree:
            tree.remove()
    text = report(sides)
    print(text)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps([{"name": s.name, "runs": {k: asdict(v) for k, v in s.runs.items()},
                                      "wlan": s.wlan and asdict(s.wlan)} for s in sides], indent=1) + "\n")
    failed = [r for s in sides for r in [*s.runs.values(), *([s.wlan] if s.wlan else [])] if not r.ok]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
