"""Figure 5 analogue: the paper's AP scheduler as configured (classifier, Q1 for TCP DATA, Q2 for
TCP ACKs, weighted round robin), with what one run's queues really held: the per-queue counts show
that DATA and ACKs were separated."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from figures.wlan.common import Run, read_json


def _box(ax: Any, x: float, y: float, w: float, h: float, text: str, colour: str) -> None:
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02", fc=colour, ec="black",
                                lw=0.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=7.5)


def _arrow(ax: Any, a: tuple[float, float], b: tuple[float, float]) -> None:
    ax.annotate("", b, a, arrowprops={"arrowstyle": "->", "lw": 1})


def dataack_trial(run: Run) -> Path | None:
    """A valid trial run with the paper's scheduler, preferring the most flows at Q = 100 and the
    largest M_t (where the ACK queue drops)."""
    for scen in ("dl4-ul4", "dl2-ul2", "dl1-ul1"):
        for cell_id in sorted(run.cells, key=lambda c: ("-q100-" not in c, -int(c.rsplit("-mt", 1)[1]), c)):
            if cell_id.startswith(f"{scen}-dataack-q"):
                trials = run.valid_trials(cell_id)
                if trials:
                    return trials[0]
    return None


def main(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    sc = run.cfg.data["scenario"]
    w_data, w_ack = int(sc["weights"]["data"]), int(sc["weights"]["ack"])
    total = w_data + w_ack
    limit_ack = "Q" if str(sc.get("ack_queue_pkts", "")).startswith("${") else sc.get("ack_queue_pkts", "Q")
    split = "each queue holds" if sc["queue_split"] == "each" else "both share"
    fig, ax = plt.subplots(figsize=(9.5, 3.6))
    ax.set_axis_off()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4)
    _box(ax, 1.0, 2, 1.5, 1.0, "from host A\n(downlink DATA,\nuplink ACKs)", "#e8e8e8")
    _box(ax, 3.0, 2, 1.5, 1.0, "classifier\nTCP payload > 0?", "#fff2cc")
    _arrow(ax, (1.75, 2), (2.25, 2))
    _box(ax, 5.3, 3.0, 2.0, 0.8, f"Q1: TCP DATA (+ non-TCP)\nweight {w_data}/{total}", "#d9ead3")
    _box(ax, 5.3, 1.0, 2.0, 0.8, f"Q2: pure TCP ACKs\nweight {w_ack}/{total}", "#fce5cd")
    _arrow(ax, (3.75, 2.2), (4.3, 3.0))
    _arrow(ax, (3.75, 1.8), (4.3, 1.0))
    _box(ax, 7.5, 2, 1.3, 1.0, f"WRR {w_data}:{w_ack}\n(packets,\nwork-conserving)", "#cfe2f3")
    _arrow(ax, (6.3, 3.0), (6.85, 2.2))
    _arrow(ax, (6.3, 1.0), (6.85, 1.8))
    _box(ax, 9.2, 2, 1.1, 1.0, f"MAC queue\n{sc['mac_queue_pkts']} pkts\n-> 802.11b", "#e8e8e8")
    _arrow(ax, (8.15, 2), (8.65, 2))
    ax.text(5.3, 3.75, f"limits: {split} Q packets (Q2: {limit_ack}); drop-tail", ha="center", fontsize=7)
    trial = dataack_trial(run)
    if trial is not None:
        raw = read_json(trial / "wlan.json")
        counts = (f"{trial.parent.name}, trial {trial.name[6:]}, metric window: Q1 took {raw['ap_q1_enq_data']} DATA, "
                  f"{raw['ap_q1_enq_ack']} ACKs, {raw['ap_q1_enq_other']} other; Q2 took {raw['ap_q2_enq_ack']} ACKs, "
                  f"{raw['ap_q2_enq_data']} DATA.\nServed: {raw['ap_q1_deq_data']} DATA, {raw['ap_q2_deq_ack']} ACKs; "
                  f"dropped: {raw['ap_q1_drop_data']} DATA, {raw['ap_q2_drop_ack']} ACKs.")
        ax.text(0.0, 0.0, counts, fontsize=6.5, family="monospace", va="bottom")
    fig.suptitle("Fig. 5: the DATA/ACK scheduling discipline at the AP (config/wlan.yaml scenario.weights)",
                 fontsize=10)
    return run.save(fig, "fig05_scheduler")
