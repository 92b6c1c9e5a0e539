"""Figure 1: the testbed, drawn from what a trial actually ran: its spec (hosts, flows) and its
provenance (the qdisc trees as read back from the kernel, calibrated delays, kernel, algorithm)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from figures.collateral.common import Run


def first_trial(run: Run) -> Path | None:
    for cell_id in sorted(run.cells):
        for d in run.valid_trials(cell_id):
            if (d / "provenance.json").exists():
                return d
    return None


def _queue_text(tree: dict[str, Any]) -> str:
    rate = next((p for p in tree.get("classes", "").split(" rate ")[1:2]), "?").split()[0]
    leaf = next((q for q in tree["qdiscs"] if q["kind"] in ("bfifo", "pfifo")), None)
    limit = leaf["options"].get("limit") if leaf else "?"
    unit = "B" if leaf and leaf["kind"] == "bfifo" else "pkts"
    return f"{tree['dev']}: htb {rate}\n{leaf['kind'] if leaf else '?'} {limit} {unit} (+1 in transmission)"


def _delay_text(tree: dict[str, Any] | None) -> str:
    if not tree:
        return "no delay stage"
    netem = next((q for q in tree["qdiscs"] if q["kind"] == "netem"), None)
    delay = netem["options"]["delay"]["delay"] * 1000 if netem else 0
    return f"netem {delay:.2f} ms on each host port ({tree['dev']}, ...)"


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    d = first_trial(run)
    if d is None:
        return []
    spec = json.loads((d / "spec.json").read_text())
    prov = json.loads((d / "provenance.json").read_text())
    q = prov["qdiscs"]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set(xlim=(0, 10), ylim=(0, 4.6))
    ax.axis("off")

    def box(x: float, y: float, text: str, color: str = "#e8eef7") -> None:
        ax.add_patch(FancyBboxPatch((x - 0.6, y - 0.3), 1.2, 0.6, boxstyle="round,pad=0.05", fc=color, ec="k"))
        ax.text(x, y, text, ha="center", va="center", fontsize=8)

    bulk = [f for f in spec["flows"] if f["kind"] == "bulk"]
    voip = [f for f in spec["flows"] if f["kind"] == "voip"]
    ccs = sorted({f["cc"] for f in bulk})
    box(0.8, 3.4, f"A (s0)\n{len(bulk)} x iperf3\n{', '.join(ccs)}")
    box(0.8, 1.2, f"B (s1)\nUDP {voip[0]['packet_bytes']} B\nevery {voip[0]['interval_ms']} ms" if voip else "B (s1)")
    box(2.7, 2.3, "bl\n(bridge)", "#f3f3f3")
    box(5.0, 2.3, "router rt", "#fde9d9")
    box(7.3, 2.3, "br\n(bridge)", "#f3f3f3")
    box(9.2, 3.4, "C (r0)\nTCP sink")
    box(9.2, 1.2, "D (r1)\nUDP sink")
    for (x1, y1), (x2, y2) in [((1.4, 3.4), (2.1, 2.4)), ((1.4, 1.2), (2.1, 2.2)), ((3.3, 2.3), (4.4, 2.3)),
                               ((5.6, 2.3), (6.7, 2.3)), ((7.9, 2.4), (8.6, 3.4)), ((7.9, 2.2), (8.6, 1.2))]:
        ax.plot([x1, x2], [y1, y2], color="k", lw=1)
    ax.text(6.15, 2.75, "forward  ->\n" + _queue_text(q["forward/queue"]), ha="center", fontsize=7)
    ax.text(3.85, 1.55, "<-  reverse\n" + _queue_text(q["reverse/queue"]), ha="center", fontsize=7)
    ax.text(8.1, 3.9, "forward delay: " + _delay_text(q.get("forward/delay")), ha="center", fontsize=7)
    ax.text(1.9, 0.35, "reverse delay: " + _delay_text(q.get("reverse/delay")), ha="center", fontsize=7)
    k = prov["kernel"]
    rtt = prov["calibration"]["rounds"][-1]["base_rtt_ms"]
    ax.text(5.0, 4.35, f"Fig. 1: testbed of {d.parent.name}/{d.name}: Linux {k['release']} "
            f"({k['where']}{', ' + k['accel'] if k.get('accel') else ''}), idle RTT {rtt:.2f} ms "
            f"(configured {spec['scenario']['bottleneck']['forward']['delay_ms'] * 2:g} ms)",
            ha="center", fontsize=9)
    return run.save(fig, "fig1_testbed")
