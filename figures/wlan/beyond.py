"""Beyond the paper, two figures.

beyond_adaptive: the goodput ratio against M_t on asymmetric scenarios with FIFO, the paper's fixed
2:1 scheduler and the adaptive one its conclusion asks for (weights 2 N_down : N_up), beside the
target N_down/N_up (per-flow fairness).

beyond_ack_queue: why the fixed scheduler misses 1:1 with many flows. Top: the ratio with FIFO, with
the scheduler (ACK queue Q), and with the scheduler and a 1000-packet ACK queue. Bottom: the share
of ACKs the AP dropped: a dropped ACK costs the uplink sender nothing (the next, cumulative, ACK
covers its segments), so the more ACKs the queue drops, the less it throttles the uplink.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.wlan_claims import RATIO
from figures.wlan.common import VARIANT_STYLE, Run
from figures.wlan.curves import _draw, _mt_axis


def _variants(run: Run, spec: dict[str, Any]) -> list[str]:
    return [s for s in spec["scenarios"] if any(run.index().mts(s, v, spec["q"]) for v in spec["variants"])]


def adaptive(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    spec = run.reference["beyond"]["adaptive"]
    cells = run.index()
    scens = _variants(run, spec)
    if not scens:
        return []
    fig, axes = plt.subplots(1, len(scens), figsize=(5.2 * len(scens), 3.9), squeeze=False)
    for ax, scen in zip(axes[0], scens, strict=True):
        n_down, n_up = cells.flows[scen]
        for v in spec["variants"]:
            _draw(ax, cells.curve(scen, v, spec["q"], RATIO), **VARIANT_STYLE[v])
        ax.axhline(n_down / n_up, color="black", ls="--", lw=0.9, label=f"target N_down/N_up = {n_down / n_up:g}")
        ax.axhline(1, color="black", ls=":", lw=0.6)
        ax.set_yscale("log")
        ax.set(ylabel="downlink / uplink goodput", title=f"{scen}, Q = {spec['q']}")
        _mt_axis(ax, cells)
        ax.legend(fontsize=7)
    fig.suptitle("Beyond the paper: adaptive DATA/ACK weights on asymmetric scenarios", fontsize=10)
    run.caption(fig, "beyond.py", f"{'/'.join(scens)}-{{{','.join(spec['variants'])}}}-q{spec['q']}-mt*")
    return run.save(fig, "beyond_adaptive")


def ack_queue(run: Run) -> list[Path]:
    import matplotlib.pyplot as plt

    spec = run.reference["beyond"]["ack_queue"]
    cells = run.index()
    scens = _variants(run, spec)
    if not scens:
        return []
    fig, axes = plt.subplots(2, len(scens), figsize=(5.2 * len(scens), 6.4), squeeze=False, sharex=True)
    for col, scen in enumerate(scens):
        top, bottom = axes[0][col], axes[1][col]
        for v in spec["variants"]:
            _draw(top, cells.curve(scen, v, spec["q"], RATIO), **VARIANT_STYLE[v])
            _draw(bottom, cells.curve(scen, v, spec["q"], "ap_ack_drop_frac"), **VARIANT_STYLE[v])
        top.axhline(1, color="black", ls=":", lw=0.8)
        top.set_yscale("log")
        top.set(ylabel="downlink / uplink goodput", title=f"{scen}, Q = {spec['q']}")
        top.grid(alpha=0.3)
        top.legend(fontsize=7)
        bottom.set(ylabel="ACKs dropped at the AP (share)", ylim=(0, 1))
        _mt_axis(bottom, cells)
    fig.suptitle("Beyond the paper: ACKs dropped at the AP let the uplink escape the scheduler's ACK-rate throttle",
                 fontsize=10)
    run.caption(fig, "beyond.py", f"{'/'.join(scens)}-{{{','.join(spec['variants'])}}}-q{spec['q']}-mt*")
    return run.save(fig, "beyond_ack_queue")


def main(run: Run) -> list[Path]:
    return adaptive(run) + ack_queue(run)
