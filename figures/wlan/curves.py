"""Figures 2, 3, 4 (FIFO) and 6, 7, 8 (the DATA/ACK scheduler): goodput ratio, goodputs and DATA
loss probability against M_t, as `reference.figures` in config/wlan.yaml defines each one.

ratio: one panel per scenario, one curve per AP buffer, log scale (1:1 marked). goodput: one
panel, one colour per scenario, downlink solid and uplink dash-dotted (as the paper draws them).
loss: (a) uplink and (b) downlink of the one scenario, one curve per AP buffer.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.wlan_claims import DOWN, DOWN_LOSS, RATIO, UP, UP_LOSS, Cells, Point
from figures.wlan.common import SCEN_COLOURS, Run, q_colour

PANEL = "abcdefgh"


def _qs(cells: Cells, scen: str, variant: str, q: Any) -> list[int]:
    have = cells.qs(scen, variant)
    return have if q == "all" else [x for x in have if x == int(q)]


def _draw(ax: Any, pts: list[Point], **style: Any) -> None:
    if not pts:
        return
    xs, ys = [p.mt for p in pts], [p.mean for p in pts]
    err = [[p.mean - p.low for p in pts], [p.high - p.mean for p in pts]]
    ax.errorbar(xs, ys, yerr=err, capsize=2, lw=1.2, ms=4, **style)


def _mt_axis(ax: Any, cells: Cells) -> None:
    mts = sorted({k[3] for k in cells.by_key})
    ax.set_xticks(mts)
    ax.set_xlabel("maximum transmission attempts M_t")
    ax.grid(alpha=0.3)


def ratio_figure(run: Run, fid: str, spec: dict[str, Any]) -> list[Path]:
    import matplotlib.pyplot as plt

    cells = run.index()
    scens = [s for s in spec["scenarios"] if _qs(cells, s, spec["variant"], spec["q"])]
    if not scens:
        return []
    fig, axes = plt.subplots(1, len(scens), figsize=(5.2 * len(scens), 3.9), squeeze=False)
    for i, (ax, scen) in enumerate(zip(axes[0], scens, strict=True)):
        for q in _qs(cells, scen, spec["variant"], spec["q"]):
            _draw(ax, cells.curve(scen, spec["variant"], q, RATIO), color=q_colour(q), marker="o", label=f"Q = {q}")
        ax.axhline(1, color="black", lw=0.8, ls=":")
        ax.set_yscale("log")
        ax.set(ylabel="downlink / uplink goodput", title=f"({PANEL[i]}) scenario {scen}")
        _mt_axis(ax, cells)
        ax.legend(fontsize=7, title="AP buffer (packets)", title_fontsize=7)
    fig.suptitle(f"Fig. {int(fid[3:])}: {spec['title']}", fontsize=10)
    run.caption(fig, "curves.py", f"{'/'.join(scens)}-{spec['variant']}-q*-mt*")
    return run.save(fig, fid)


def goodput_figure(run: Run, fid: str, spec: dict[str, Any]) -> list[Path]:
    import matplotlib.pyplot as plt

    cells = run.index()
    q = int(spec["q"])
    scens = [s for s in spec["scenarios"] if cells.mts(s, spec["variant"], q)]
    if not scens:
        return []
    fig, ax = plt.subplots(figsize=(6.2, 4.2))
    for scen in scens:
        colour = SCEN_COLOURS.get(scen, "#333333")
        _draw(ax, cells.curve(scen, spec["variant"], q, DOWN), color=colour, marker="o", ls="-",
              label=f"{scen} downlink")
        _draw(ax, cells.curve(scen, spec["variant"], q, UP), color=colour, marker="s", ls="-.",
              mfc="white", label=f"{scen} uplink")
    ax.set(ylabel="goodput (packets/s)")
    ax.set_ylim(bottom=0)
    _mt_axis(ax, cells)
    ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"Fig. {int(fid[3:])}: {spec['title']}", fontsize=10)
    run.caption(fig, "curves.py", f"{'/'.join(scens)}-{spec['variant']}-q{q}-mt*")
    return run.save(fig, fid)


def loss_figure(run: Run, fid: str, spec: dict[str, Any]) -> list[Path]:
    import matplotlib.pyplot as plt

    cells = run.index()
    scen = spec["scenarios"][0]
    qs = _qs(cells, scen, spec["variant"], spec["q"])
    if not qs:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(10.4, 3.9))
    for ax, metric, label, panel in ((axes[0], UP_LOSS, "uplink", "a"), (axes[1], DOWN_LOSS, "downlink", "b")):
        for q in qs:
            _draw(ax, cells.curve(scen, spec["variant"], q, metric), color=q_colour(q), marker="o", label=f"Q = {q}")
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_ylim(bottom=0)
        ax.set(ylabel="TCP DATA loss probability", title=f"({panel}) {label}, {scen}")
        _mt_axis(ax, cells)
        ax.legend(fontsize=7, title="AP buffer (packets)", title_fontsize=7)
    fig.suptitle(f"Fig. {int(fid[3:])}: {spec['title']} (retransmitted / sent DATA segments)", fontsize=10)
    run.caption(fig, "curves.py", f"{scen}-{spec['variant']}-q*-mt*")
    return run.save(fig, fid)


DRAW = {"ratio": ratio_figure, "goodput": goodput_figure, "loss": loss_figure}


def main(run: Run) -> list[Path]:
    written: list[Path] = []
    for fid, spec in run.reference["figures"].items():
        written += DRAW[spec["quantity"]](run, f"fig{int(fid[3:]):02d}", spec)
    return written
