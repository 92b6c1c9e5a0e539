"""Figure 1 analogue: the simulated testbed, drawn from one trial's spec.json and the model's own
report of what it ran (wlan.json): host A, the wired link, the AP and its buffer, the stations and
their flows, the 802.11b settings as the frames on the air used them."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from figures.wlan.common import Run, read_json


def _box(ax: Any, x: float, y: float, w: float, h: float, text: str, colour: str) -> None:
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02", fc=colour, ec="black",
                                lw=0.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=7)


def _modes(raw: dict[str, Any], key: str) -> str:
    found = {m.split(":")[0] for x in ("ap", "sta") for m in str(raw.get(f"phy_{x}_{key}", "")).split(",") if m}
    return ", ".join(sorted(found)) or "-"


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    trial = run.first_trial(["dl4-ul4-fifo-q100-", "dl2-ul2-fifo-q100-", "dl4-ul4-", "dl2-ul2-", "dl"])
    if trial is None:
        return []
    spec, raw = read_json(trial / "spec.json"), read_json(trial / "wlan.json")
    sc = spec["scenario"]
    n_down, n_up = int(sc["down"]), int(sc["up"])
    fig, ax = plt.subplots(figsize=(10, 0.55 * (n_down + n_up) + 2.6))
    ax.set_axis_off()
    top = n_down + n_up
    ax.set_xlim(0, 10)
    ax.set_ylim(-1.9, top)
    mid = (top - 1) / 2
    _box(ax, 1.0, mid, 1.6, 0.9, "host A\n(all TCP ends\non the wire)", "#e8e8e8")
    ax.annotate("", (3.8, mid), (1.8, mid), arrowprops={"arrowstyle": "-", "lw": 2})
    ax.text(2.8, mid + 0.15, f"Ethernet 100 Mbit/s, 0.1 ms\nqueues {sc['host_queue_pkts']} pkts", ha="center",
            fontsize=6.5, va="bottom")
    sched = sc["scheduler"]
    buf = (f"FIFO, Q = {sc['ap_queue_pkts']}" if sched == "fifo" else
           f"{sched} WRR {sc['weights']['data']}:{sc['weights']['ack']}\nQ1 (DATA) {sc['ap_queue_pkts']}, "
           f"Q2 (ACK) {sc.get('ack_queue_pkts', sc['ap_queue_pkts'])}")
    _box(ax, 4.8, mid, 2.0, 1.4, f"AP (router)\n{buf}\nMAC queue {sc['mac_queue_pkts']}\nM_t = {sc['max_tx_attempts']}",
         "#cfe2f3")
    for k in range(1, top + 1):
        y = top - k
        down = k <= n_down
        _box(ax, 8.6, y, 1.9, 0.45, f"STA{k}: {'downlink receiver' if down else 'uplink sender'}",
             "#d9ead3" if down else "#fce5cd")
        ax.annotate("", (7.6, y) if down else (5.8, mid), (5.8, mid) if down else (7.6, y),
                    arrowprops={"arrowstyle": "->", "lw": 0.9, "color": "#38761d" if down else "#b45f06",
                                "connectionstyle": "arc3,rad=0.0"})
    ax.text(6.6, top - 0.1, "802.11b DCF, one BSS, every node hears every node", ha="center", fontsize=7)
    lines = [
        f"data frames: {_modes(raw, 'data_modes')}; MAC ACKs: {_modes(raw, 'ack_modes')}; "
        f"long preamble frames {raw.get('phy_ap_long_preamble', 0) + raw.get('phy_sta_long_preamble', 0)}, "
        f"short {raw.get('phy_ap_short_preamble', 0) + raw.get('phy_sta_short_preamble', 0)}; "
        f"RTS/CTS frames {sum(raw.get(f'phy_{x}_tx_{k}', 0) for x in ('ap', 'sta') for k in ('rts', 'cts'))}",
        f"TCP {sc['tcp']} (SACK, timestamps, window scaling, delayed ACKs {sc['delack_timeout_s'] * 1000:g} ms), "
        f"segment {raw.get('tcp_segment_bytes')} B, RTO floor {sc['min_rto_s'] * 1000:g} ms; station queues "
        f"{sc['sta_queue_pkts']} pkts; stations associated {raw.get('stations_associated')} of {top}",
        f"ns-3 {raw.get('ns3_version')}, {spec['duration_s']} s simulated, metrics over [{spec['warmup_s']}, "
        f"{spec['duration_s']}) s, RNG seed {sc['seed']} run {spec['trial']}",
    ]
    ax.text(0.0, -1.0, "\n".join(lines), fontsize=6.5, va="center", family="monospace")
    fig.suptitle(f"Fig. 1: the simulated testbed as run ({trial.parent.name}/{trial.name})", fontsize=10)
    return run.save(fig, "fig01_testbed")
