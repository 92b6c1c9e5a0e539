"""TCP over 802.11b: the testbed (Figure 1), the goodput, ratio and loss curves against M_t (Figures
2-4, 6-8), Figure 5's scheduler and the scenarios beyond the paper, each a function of the loaded run
that returns the files it wrote."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from analysis.report.captions import draws
from analysis.report.paper_run import read_json
from analysis.wlan.claims import DOWN, DOWN_LOSS, RATIO, UP, UP_LOSS, Cells, Point
from analysis.wlan.run import SCEN_COLOURS, VARIANT_STYLE, Run, q_colour


def _box(ax: Any, x: float, y: float, w: float, h: float, text: str, colour: str, fontsize: float = 7) -> None:
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02", fc=colour, ec="black",
                                lw=0.8))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _modes(raw: dict[str, Any], key: str) -> str:
    found = {m.split(":")[0] for x in ("ap", "sta") for m in str(raw.get(f"phy_{x}_{key}", "")).split(",") if m}
    return ", ".join(sorted(found)) or "-"


@draws("fig01_testbed")
def fig1_testbed(run: Run) -> list[Path]:
    """Figure 1 analogue: the simulated testbed, drawn from one trial's spec.json and the model's own
    report of what it ran (wlan.json): host A, the wired link, the AP and its buffer, the stations
    and their flows, the 802.11b settings as the frames on the air used them."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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


PANEL = "abcdefgh"
LAYOUT = {"ratio": "one panel per scenario, one curve per AP buffer, log scale (1:1 dotted)",
          "goodput": "one colour per scenario, downlink solid and uplink dash-dotted (as the paper draws them)",
          "loss": "(a) uplink and (b) downlink of the one scenario, one curve per AP buffer"}


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
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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
    run.caption(fig, "ratio_figure", f"{'/'.join(scens)}-{spec['variant']}-q*-mt*")
    return run.save(fig, fid)


# A cell id of the paper's matrix: scenario, variant, AP buffer, M_t.
CELL = re.compile(r"^(dl\d+-ul\d+)-(.+)-q(\d+)-mt(\d+)$")


def paper_goodputs(ax: Any, run: Run, variant: str, q: int, scens: list[str]) -> None:
    """The goodputs the paper's text prints (reference.tables), as black stars on the cell they
    belong to, so the curves read against the paper's own numbers."""
    for table in (run.reference.get("tables") or {}).values():
        cols = list(table["columns"])
        for cell_id, row in table["values"].items():
            m = CELL.match(cell_id)
            if not m or m[2] != variant or int(m[3]) != q or m[1] not in scens:
                continue
            for col, value, marker in (("down", row[cols.index("down")], "*"), ("up", row[cols.index("up")], "X")):
                ax.plot(int(m[4]), value, marker=marker, ms=11, color="black", ls="", zorder=5,
                        label=f"paper: {m[1]} {'downlink' if col == 'down' else 'uplink'} ({value:g})")


def goodput_figure(run: Run, fid: str, spec: dict[str, Any]) -> list[Path]:
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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
    paper_goodputs(ax, run, spec["variant"], q, scens)
    ax.set(ylabel="goodput (packets/s)")
    ax.set_ylim(bottom=0)
    _mt_axis(ax, cells)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))    # outside: never over the data
    fig.suptitle(f"Fig. {int(fid[3:])}: {spec['title']}", fontsize=10)
    run.caption(fig, "goodput_figure", f"{'/'.join(scens)}-{spec['variant']}-q{q}-mt*")
    return run.save(fig, fid)


def loss_figure(run: Run, fid: str, spec: dict[str, Any]) -> list[Path]:
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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
    run.caption(fig, "loss_figure", f"{scen}-{spec['variant']}-q*-mt*")
    return run.save(fig, fid)


DRAW = {"ratio": ratio_figure, "goodput": goodput_figure, "loss": loss_figure}


def curve_title(reference: dict[str, Any], stem: str) -> str:
    """fig<nn>'s title as `reference.figures` in config/wlan.yaml gives it, and how it is laid out."""
    spec = reference["figures"][f"fig{int(stem[3:])}"]
    return f"Fig. {int(stem[3:])}: {spec['title']}; {LAYOUT[spec['quantity']]}"


@draws("fig0[234678]", title=curve_title)
def curves(run: Run) -> list[Path]:
    """Figures 2, 3, 4 (FIFO) and 6, 7, 8 (the DATA/ACK scheduler): goodput ratio, goodputs and DATA
    loss probability against M_t, as `reference.figures` in config/wlan.yaml defines each one;
    points are the cells' trimmed means, bars the smallest to largest trial."""
    written: list[Path] = []
    for fid, spec in run.reference["figures"].items():
        written += DRAW[spec["quantity"]](run, f"fig{int(fid[3:]):02d}", spec)
    return written


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


@draws("fig05_scheduler")
def fig5_scheduler(run: Run) -> list[Path]:
    """Figure 5 analogue: the paper's AP scheduler as configured (classifier, Q1 for TCP DATA, Q2 for
    TCP ACKs, weighted round robin), with what one run's queues really held: the per-queue counts
    show that DATA and ACKs were separated."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    sc = run.cfg.data["scenario"]
    w_data, w_ack = int(sc["weights"]["data"]), int(sc["weights"]["ack"])
    total = w_data + w_ack
    limit_ack = "Q" if str(sc.get("ack_queue_pkts", "")).startswith("${") else sc.get("ack_queue_pkts", "Q")
    split = "each queue holds" if sc["queue_split"] == "each" else "both share"
    trial = dataack_trial(run)
    # the MAC queue is a matrix parameter: the drawn trial's own, else the first cell's
    macq = (read_json(trial / "spec.json")["scenario"]["mac_queue_pkts"] if trial is not None
            else next(iter(run.cfg.cells_by_id.values())).scenario["mac_queue_pkts"])
    fig, ax = plt.subplots(figsize=(9.5, 3.6))
    ax.set_axis_off()
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4)
    _box(ax, 1.0, 2, 1.5, 1.0, "from host A\n(downlink DATA,\nuplink ACKs)", "#e8e8e8", fontsize=7.5)
    _box(ax, 3.0, 2, 1.5, 1.0, "classifier\nTCP payload > 0?", "#fff2cc", fontsize=7.5)
    _arrow(ax, (1.75, 2), (2.25, 2))
    _box(ax, 5.3, 3.0, 2.0, 0.8, f"Q1: TCP DATA (+ non-TCP)\nweight {w_data}/{total}", "#d9ead3", fontsize=7.5)
    _box(ax, 5.3, 1.0, 2.0, 0.8, f"Q2: pure TCP ACKs\nweight {w_ack}/{total}", "#fce5cd", fontsize=7.5)
    _arrow(ax, (3.75, 2.2), (4.3, 3.0))
    _arrow(ax, (3.75, 1.8), (4.3, 1.0))
    _box(ax, 7.5, 2, 1.3, 1.0, f"WRR {w_data}:{w_ack}\n(packets,\nwork-conserving)", "#cfe2f3", fontsize=7.5)
    _arrow(ax, (6.3, 3.0), (6.85, 2.2))
    _arrow(ax, (6.3, 1.0), (6.85, 1.8))
    _box(ax, 9.2, 2, 1.1, 1.0, f"MAC queue\n{macq} pkts\n-> 802.11b", "#e8e8e8", fontsize=7.5)
    _arrow(ax, (8.15, 2), (8.65, 2))
    ax.text(5.3, 3.75, f"limits: {split} Q packets (Q2: {limit_ack}); drop-tail", ha="center", fontsize=7)
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


# Beyond the paper, two figures: beyond_adaptive and beyond_ack_queue.
def _variants(run: Run, spec: dict[str, Any]) -> list[str]:
    return [s for s in spec["scenarios"] if any(run.index().mts(s, v, spec["q"]) for v in spec["variants"])]


@draws("beyond_adaptive")
def adaptive(run: Run) -> list[Path]:
    """Beyond the paper: the goodput ratio against M_t on asymmetric scenarios with FIFO, the paper's
    fixed 2:1 scheduler and the adaptive one its conclusion asks for (weights 2 N_down : N_up),
    beside the target N_down/N_up (per-flow fairness)."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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
    run.caption(fig, "adaptive", f"{'/'.join(scens)}-{{{','.join(spec['variants'])}}}-q{spec['q']}-mt*")
    return run.save(fig, "beyond_adaptive")


@draws("beyond_ack_queue")
def ack_queue(run: Run) -> list[Path]:
    """Beyond the paper, why the fixed scheduler misses 1:1 with many flows. Top: the ratio with
    FIFO, with the scheduler (ACK queue Q), and with the scheduler and larger ACK queues. Bottom: the
    share of ACKs the AP dropped: a dropped ACK costs the uplink sender nothing (the next,
    cumulative, ACK covers its segments), so the more ACKs the queue drops, the less it throttles
    the uplink."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
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
    run.caption(fig, "ack_queue", f"{'/'.join(scens)}-{{{','.join(spec['variants'])}}}-q{spec['q']}-mt*")
    return run.save(fig, "beyond_ack_queue")


def beyond(run: Run) -> list[Path]:
    return adaptive(run) + ack_queue(run)
