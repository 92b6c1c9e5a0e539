"""verdict.md: claim by claim what reproduced, with the measured numbers; the dl1-ul1 table; the
choices the paper leaves open; the simulator and binary the trials ran; what differs from the
paper's real testbed."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from analysis.paper_tables import to_markdown
from analysis.report import claims_markdown
from analysis.report.paper_run import choices_lines, robustness_lines, write_verdict
from analysis.report.verdict_head import verdict_head
from analysis.verdicts import Verdict
from analysis.wlan import claims as wlan_claims
from analysis.wlan import investigation
from analysis.wlan.claims import retry_drops
from analysis.wlan.run import Run
from analysis.wlan.tables import tables

# What a simulation cannot carry over from the paper's hardware, independent of this run.
DIFFERENCES = [
    "Real Prism 2.5 cards, the hostap driver and a Linux bridge against ns-3's 802.11 DCF, a routing AP and "
    "no driver or firmware latency: the model's channel carries more TCP goodput than the paper's cards (the "
    "dl1-ul1 table below).",
    "The channel loses frames only to collisions (every node hears every other, no capture, no noise); the "
    "paper's room had some of both.",
    "ns-3's TCP (TcpLinuxReno, PRR recovery, initial window 10) for the 2004-05 Linux senders; a packet "
    "dropped by a station's own full interface queue is a loss to ns-3's TCP, while Linux would shrink its "
    "window without retransmitting.",
    "The paper's traces were taken at host A and by a monitor station; the model counts at each sender and "
    "at the MAC directly.",
]


def verdicts(run: Run) -> list[Verdict]:
    return wlan_claims.evaluate(run.cells, run.cfg, run.profile)


def identical_cells(run: Run) -> list[str]:
    """Cells whose trials gave exactly another cell's numbers (the model ran the same experiment):
    a claim's comparisons that read them count once (analysis/verdicts.py, count_once). Where the
    two differ only in M_t and no frame of the lower limit's trials used up its attempts, that is
    why: the limit never acted, and trial k of every cell draws from the same random streams (seed,
    run k)."""
    params = run.params
    seen: dict[str, str] = {}
    out = []
    for cell_id, cell in sorted(run.cells.items(), key=lambda kv: (params[kv[0]].get("mt", 0), kv[0])):
        key = json.dumps({k: v.get("values") for k, v in sorted(cell.get("metrics", {}).items())}, sort_keys=True)
        if key not in seen:
            seen[key] = cell_id
            continue
        first = seen[key]
        a, b = params[first], params[cell_id]
        only_mt = {k for k in a if a[k] != b.get(k)} == {"mt"}
        why = (f" (no frame used up its {a['mt']} attempts)"
               if only_mt and retry_drops(run.cells[first]) == 0 else "")
        out.append(f"{cell_id} = {first}{why}")
    return sorted(out)


def simulator_lines(run: Run) -> list[str]:
    """From the valid trials' provenance: simulator, binary, checks."""
    sims: Counter[str] = Counter()
    checks: dict[str, Counter[str]] = {}
    wall: list[float] = []
    derived = 0
    for cell_id in run.cells:
        for trial in run.valid_trials(cell_id):
            prov = json.loads((trial / "provenance.json").read_text())
            s = prov.get("simulator", {})
            sims[f"{s.get('version')}, {s.get('package')}, {s.get('compiler')}, binary {s.get('binary')} "
                 f"sha256:{str(s.get('binary_sha256'))[:16]}"] += 1
            for c in prov.get("fidelity", []):
                checks.setdefault(c["name"], Counter())[{True: "pass", False: "fail", None: "n/a"}[c["pass"]]] += 1
            if "derived" in prov:
                derived += 1
            elif isinstance(prov.get("timing", {}).get("simulation_s"), int | float):
                wall.append(float(prov["timing"]["simulation_s"]))
    out = [f"- {k} ({n} trials)" for k, n in sims.items()]
    if derived:
        out.append(f"- {derived} trials not simulated again: each is a finished trial's run, proven by that run's own "
                   "output (the same RNG run with a smaller M_t and no frame given up; provenance `derived`, "
                   "testbed/proven_runs.py)")
    out += [f"- check {name}: " + ", ".join(f"{n} {v}" for v, n in sorted(c.items())) for name, c in checks.items()]
    if wall:
        out.append(f"- wall time per simulation: {min(wall):.1f} to {max(wall):.1f} s "
                   f"(mean {sum(wall) / len(wall):.1f})")
    return out


def render(run: Run, claims: list[Verdict]) -> str:
    same = identical_cells(run)
    out = verdict_head(run, claims, "802.11b uplink/downlink fairness",
                       f"Cells simulated: {len(run.cells)} of {len(run.cfg.cells_by_id)}",
                       note=["The testbed is ns-3 3.37's 802.11 DCF model compiled from sim/wlan/ "
                             "(figures/wlan/README.md says how each number is computed and which modelling "
                             "choices matter).", ""])
    if same:
        out += [f"Cells whose trials gave exactly another cell's numbers ({len(same)}; the model ran the same "
                "experiment, so a claim's comparisons that read such runs count once, their text naming the "
                "conditions merged into them). Where only M_t differs and no frame "
                "of the lower limit's trials used up its attempts, the higher limit never acted, and trial k of "
                "every cell draws from the same random streams (ns-3 seed 1, run k), so the runs are the same "
                "event for event (the section on M_t 6 to 8 with a random stream per cell shows what independent "
                "draws give): " + ", ".join(same) + ".", ""]
    out += claims_markdown.section(claims, "The paper's claims")
    out += ["## dl1-ul1 at M_t = 1 beside the paper", ""]
    out += [to_markdown(t) for t in tables(run).values()]
    out += investigation.section(run)
    out += ["## What the paper leaves open, and what we chose", ""]
    out += choices_lines(run)
    out += ["", *robustness_lines(run)]
    out += ["## The simulator", "", *simulator_lines(run), "",
            "## What differs from the paper's testbed", "", *[f"- {d}" for d in DIFFERENCES]]
    return "\n".join(out) + "\n"


def write(run: Run) -> list[Path]:
    claims = verdicts(run)
    return write_verdict(run, claims, render(run, claims))
