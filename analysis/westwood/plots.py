"""Westwood+ against CUBIC: the report's Figure 1 listing, Figure 4's testbed, the cwnd/ssthresh traces
of Figures 5-10, Figure 11's mismatch and the sweeps beyond the report, each a function of the loaded
run that returns the files it wrote."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from analysis.parsers import read_qdisc
from analysis.report.captions import draws
from analysis.report.paper_run import bulk_tool, cc_label, read_json
from analysis.westwood import claims as ww
from analysis.westwood import metrics as wm
from analysis.westwood.metrics import tcpprobe_listing
from analysis.westwood.run import CCS, TESTS, Run, series, style

COLUMNS = ["time (s)", "src:port", "dst:port", "length", "snd_nxt", "snd_una", "snd_cwnd", "ssthresh",
           "snd_wnd", "srtt (us)"]


@draws("fig01_tcpprobe")
def fig1_probe_listing(run: Run) -> list[Path]:
    """Figure 1 analogue: the report's Figure 1 is a tcpprobe text listing, so ours is a table
    (fig01_tcpprobe.md): the first lines of one trial's tcp:tcp_probe records from mid-trial, in the
    column layout of the tcp_probe module the report used."""
    trial = run.median_trial("westwood", "t1") or run.median_trial("cubic", "t1")
    if trial is None:
        trial = next((t for cid in sorted(run.cells) for t in run.valid_trials(cid)), None)
    if trial is None:
        return []
    s = series(trial)
    start = len(s.probe) // 2          # mid-trial, where cwnd and ssthresh are both set
    rows = [line.split() for line in tcpprobe_listing(s.probe.iloc[start:], rows=12)]
    out = run.out / "fig01_tcpprobe.md"
    out.write_text("\n".join([
        f"Fig. 1: our probe output in the report's tcpprobe layout ({trial.parent.name}/{trial.name}, "
        "tcp:tcp_probe, times relative to the first line)", "",
        "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS),
        *("| " + " | ".join(r) + " |" for r in rows)]) + "\n")
    return [out]


REPORT_SETUP = ("the report's: sender laptop (iperf client, tcpprobe) -> MikroTik RB750 (10 Mbit/s, layer 2) "
                "-> server laptop (dummynet, iperf server); Linux 2.6.32")


def testbed_trial(run: Run) -> Path | None:
    """The trial Figure 4 draws: the configured cell's median trial, else the first valid trial
    with a provenance record (a profile that did not run that cell)."""
    tb = run.reference.get("testbed") or {}
    trial = run.median_trial(tb["cc"], tb["condition"]) if tb else None
    if trial is not None and (trial / "provenance.json").exists():
        return trial
    return next((t for cid in sorted(run.cells) for t in run.valid_trials(cid)
                 if (t / "provenance.json").exists()), None)


def shaper_text(tree: dict[str, Any] | None) -> str:
    """A shaping qdisc tree as the kernel reported it: the HTB class's rate and burst, the drop-tail
    leaf's limit (the packet in transmission is one more: fidelity's queue_limit)."""
    if not tree:
        return "no shaper"
    words = tree.get("classes", "").split()
    rate = words[words.index("rate") + 1] if "rate" in words else "?"
    burst = words[words.index("burst") + 1].split("/")[0] if "burst" in words else "?"
    leaf = next((q for q in tree["qdiscs"] if q["kind"] in ("pfifo", "bfifo")), None)
    if leaf is None:
        return f"{tree['dev']}: htb {rate} burst {burst}, no drop-tail leaf"
    unit = "B" if leaf["kind"] == "bfifo" else "pkts"
    return (f"{tree['dev']}: htb {rate} burst {burst}\n"
            f"{leaf['kind']} {leaf['options'].get('limit')} {unit} (+1 in transmission)")


def netem_text(tree: dict[str, Any] | None) -> str:
    """A delay/loss stage as the kernel reported it; none when the test needs neither."""
    netem = next((q for q in (tree or {}).get("qdiscs", []) if q["kind"] == "netem"), None)
    if tree is None or netem is None:
        return "no netem (0 ms, 0 % loss)"
    opts = netem["options"]
    parts = []
    if (delay := (opts.get("delay") or {}).get("delay")) is not None:
        parts.append(f"delay {delay * 1000:.2f} ms")
    if (loss := (opts.get("loss-random") or {}).get("loss")) is not None:
        parts.append(f"loss {loss * 100:g} % (random)")
    return f"{tree['dev']}: netem " + (", ".join(parts) or "with neither delay nor loss")


def idle_rtt_text(spec: dict[str, Any], prov: dict[str, Any]) -> str:
    """The idle RTT the calibration reached, beside the configured one (twice the one-way delay)."""
    rounds = (prov.get("calibration") or {}).get("rounds") or []
    configured = 2 * float(spec["scenario"]["bottleneck"]["forward"]["delay_ms"])
    got = f"{rounds[-1]['base_rtt_ms']:.2f} ms" if rounds else "not calibrated"
    return f"idle RTT {got} (configured {configured:g} ms)"


def fidelity_text(prov: dict[str, Any]) -> str:
    checks = prov.get("fidelity") or []
    n = {k: sum(c.get("pass") is v for c in checks) for k, v in (("passed", True), ("failed", False))}
    return (f"fidelity checks: {n['passed']} passed, {n['failed']} failed, "
            f"{len(checks) - n['passed'] - n['failed']} not measured")


def stage_text(q: dict[str, Any]) -> str:
    """A trial's delay and loss stages, forward and reverse: once when both directions are alike."""
    fwd, rev = q.get("forward/delay"), q.get("reverse/delay")
    f_text, r_text = netem_text(fwd), netem_text(rev)
    if fwd and rev and f_text.split(": ", 1)[1] == r_text.split(": ", 1)[1]:
        return f"{f_text.split(': ', 1)[1]} each way ({fwd['dev']}, {rev['dev']})"
    return f_text if f_text == r_text else f"forward {f_text}; reverse {r_text}"


def stage_lines(run: Run, cc: str) -> list[str]:
    """Each of the report's tests: the delay and loss stages its median trial read back."""
    out = []
    for cond in TESTS:
        title = run.reference["tests"][cond]["title"].split(":")[0]
        trial = run.median_trial(cc, cond)
        if trial is None or not (trial / "provenance.json").exists():
            out.append(f"{title}: not run")
            continue
        spec, prov = read_json(trial / "spec.json"), read_json(trial / "provenance.json")
        out.append(f"{title} ({trial.parent.name}/{trial.name}): {stage_text(prov['qdiscs'])}; "
                   f"{idle_rtt_text(spec, prov)}")
    return out


def _hosts(spec: dict[str, Any], prov: dict[str, Any]) -> dict[str, str]:
    """The namespaces the trial ran, by role: the flow's pair names its end hosts (s<i>, r<i>), the
    forward shaper's device its router, and the two other namespaces are the bridges (left first)."""
    pair = next(f["pair"] for f in spec["flows"] if f["kind"] == "bulk")
    ends = {"sender": f"s{pair}", "receiver": f"r{pair}"}
    router = prov["qdiscs"]["forward/queue"]["dev"].split("-")[0]
    names = sorted(prov.get("offloads") or {})
    bridges = [n for n in names if n != router and not n.startswith(("s", "r"))] + ["?", "?"]
    return {**ends, "router": router, "left": bridges[0], "right": bridges[1]}


def _offloads_text(prov: dict[str, Any]) -> str:
    settings = {v for ports in (prov.get("offloads") or {}).values() for v in ports.values()}
    return "offloads: " + ("; ".join(sorted(settings)) + " on every port" if settings else "not recorded")


def _cc_text(prov: dict[str, Any]) -> str:
    ccs = prov.get("congestion_controls") or {}
    return "; ".join(f"{c['name']} ({c['impl']}" + (f", sha256 {c['object_sha256'][:12]}" if c.get("object_sha256")
                                                     else "") + ")" for c in ccs.values()) or "?"


@draws("fig04_testbed")
def fig4_testbed(run: Run) -> list[Path]:
    """Figure 4 analogue: the report's Figure 4 is its setup (a sender laptop, a MikroTik RB750
    setting 10 Mbit/s at layer 2, dummynet for delay and loss on the server laptop). Ours is drawn
    from what one trial ran (the trial of `reference.testbed` in config/westwood.yaml): its spec
    (flow, algorithm) and provenance (hosts, the shaping qdisc trees as read back from the kernel,
    the calibrated netem delay, loss, kernel, offloads, fidelity checks); below it, each of the
    report's three tests' delay and loss stage as its own trial read it back, since one trial shows
    one test's only."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    trial = testbed_trial(run)
    if trial is None:
        return []
    spec, prov = read_json(trial / "spec.json"), read_json(trial / "provenance.json")
    q, h = prov["qdiscs"], _hosts(spec, prov)
    bulk = next(f for f in spec["flows"] if f["kind"] == "bulk")
    n = int((run.reference.get("testbed") or {}).get("figure", 4))
    tool = bulk_tool(trial, [bulk["id"]])
    fig, ax = plt.subplots(figsize=(10, 4.2))
    ax.set(xlim=(0, 10), ylim=(-1.9, 3.3))
    ax.axis("off")

    def box(x: float, text: str, color: str = "#e8eef7") -> None:
        ax.add_patch(FancyBboxPatch((x - 0.7, 1.45), 1.4, 0.9, boxstyle="round,pad=0.05", fc=color, ec="k"))
        ax.text(x, 1.9, text, ha="center", va="center", fontsize=7.5)

    box(0.8, f"sender {h['sender']}\n{tool} client\n{style(bulk['cc'])['label']}\ntcp:tcp_probe")
    box(2.9, f"{h['left']}\n(bridge)", "#f3f3f3")
    box(5.0, f"router {h['router']}\n(shaper)", "#fde9d9")
    box(7.1, f"{h['right']}\n(bridge)", "#f3f3f3")
    box(9.2, f"receiver {h['receiver']}\n{tool} server")
    for x1, x2 in ((1.5, 2.2), (3.6, 4.3), (5.7, 6.4), (7.8, 8.5)):
        ax.plot([x1, x2], [1.9, 1.9], color="k", lw=1)
    ax.text(6.05, 2.45, "forward (data) ->\n" + shaper_text(q.get("forward/queue")), ha="center", fontsize=7)
    ax.text(3.95, 0.85, "<- reverse (ACKs)\n" + shaper_text(q.get("reverse/queue")), ha="center", fontsize=7)
    ax.text(8.15, 3.05, "forward: " + netem_text(q.get("forward/delay")), ha="center", fontsize=7)
    ax.text(1.85, 0.55, "reverse: " + netem_text(q.get("reverse/delay")), ha="center", fontsize=7)
    k = prov["kernel"]
    lines = [f"Linux {k['release']} ({k['where']}{', ' + k['accel'] if k.get('accel') else ''}); "
             f"{_cc_text(prov)}; {idle_rtt_text(spec, prov)}",
             f"{_offloads_text(prov)}; {fidelity_text(prov)}",
             "sysctls: " + ", ".join(f"{n}={v}" for n, v in sorted((prov.get("sysctls") or {}).items())),
             "each test's delay and loss stage, read back from its trial:",
             *(f"  {line}" for line in stage_lines(run, bulk["cc"])),
             REPORT_SETUP]
    ax.text(0.0, -0.75, "\n".join(lines), fontsize=6, va="center", family="monospace")
    fig.suptitle(f"Fig. {n} analogue: the emulated testbed as run ({trial.parent.name}/{trial.name})", fontsize=10)
    return run.save(fig, f"fig{n:02d}_testbed")


# Figures 5-10: cwnd and ssthresh against time, CUBIC and Westwood+, for each of the report's
# three tests: the trial nearest its cell's median throughput, named in the title.
#
# ssthresh is what tcp_probe prints, as in the report (its 2.6.32 module printed the same
# tcp_current_ssthresh()): outside loss recovery that is max(ssthresh, 3/4 cwnd). It is not drawn
# before the first loss, when the kernel holds it "infinite".
def figure_number(run: Run, cond: str, cc: str) -> int:
    return int(run.reference["tests"][cond]["figures"][cc])


def cwnd_title(reference: dict[str, Any], stem: str) -> str:
    """fig<n>_<test>_<cc>'s title: the figure's number, the report's test and the algorithm."""
    n, cond, cc = stem.split("_")
    return f"Fig. {int(n[3:])}: {reference['tests'][cond]['title']}, {style(cc)['label']}"


def paper_throughput(ax: Any, run: Run, cc: str, cond: str) -> None:
    """The throughput the report prints for this trace (reference.tables.throughput) beside the
    cell's measured mean: a trace in packets cannot carry a rate on its axis, so a boxed legend line."""
    table = run.reference["tables"]["throughput"]
    row = table["values"].get(f"{cc}-{cond}")
    if not row:
        return
    col = next(iter(table["columns"]))
    agg = (run.cells.get(f"{cc}-{cond}") or {}).get("metrics", {}).get(table["columns"][col]["metric"])
    measured = f"; measured (cell mean): {agg['mean']:.0f} kbit/s" if agg else ""
    ax.plot([], [], ls="", marker="s", color="black", label=f"paper: {row[0]:g} kbit/s{measured}")


@draws("fig0[5-9]_*_*", "fig10_*_*", title=cwnd_title)
def fig5_10_cwnd(run: Run) -> list[Path]:
    """Figures 5-10: cwnd and ssthresh (dashed) against time for one of the report's three tests
    and one algorithm, from the trial nearest its cell's median throughput (named in the title).
    ssthresh is what tcp_probe prints, max(ssthresh, 3/4 cwnd) outside loss recovery, and is not
    drawn before the first loss."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    written: list[Path] = []
    for cond in TESTS:
        for cc in CCS:
            trial = run.median_trial(cc, cond)
            if trial is None:
                continue
            s = series(trial)
            n = figure_number(run, cond, cc)
            fig, ax = plt.subplots(figsize=(7, 3.4))
            ax.step(s.t, s.cwnd, where="post", color=style(cc)["color"], lw=0.8, label="cwnd")
            if np.isfinite(s.ssthresh).any():
                ax.step(s.t, s.ssthresh, where="post", color="black", lw=0.8, ls="--", label="ssthresh")
            test = run.reference["tests"][cond]["title"]
            ax.set(xlabel="time since the flow started (s)", ylabel="packets",
                   title=f"Fig. {n}: {test}, {style(cc)['label']}\n({trial.parent.name}/{trial.name}, "
                         f"the trial nearest the cell's median throughput)")
            paper_throughput(ax, run, cc, cond)
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)  # below: never over the data
            written += run.save(fig, f"fig{n:02d}_{cond}_{cc}")
    return written


@draws("fig11_mismatch")
def fig11_mismatch(run: Run) -> list[Path]:
    """Figure 11 (the report's appendix A.1): a shaper queue that holds more packets than any window
    the end hosts' socket buffers allow never overflows, so cwnd grows with no congestion event and
    the queue (grey, right axis) grows along: the Westwood+ trial nearest the cell's median."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    spec = run.reference["mismatch"]
    cc, cond = spec["cc"], spec["condition"]
    trial = run.median_trial(cc, cond)
    if trial is None:
        return []
    s = series(trial)
    queue_pkts = run.params[f"{cc}-{cond}"]["queue_pkts"]
    prov = json.loads((trial / "provenance.json").read_text())
    q = read_qdisc(trial / "qdisc.csv")
    q = q[q["role"] == "forward"]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    ax.step(s.t, s.cwnd, where="post", color=style(cc)["color"], lw=0.9, label="cwnd")
    if np.isfinite(s.ssthresh).any():
        ax.step(s.t, s.ssthresh, where="post", color="black", lw=0.8, ls="--", label="ssthresh")
    ax.set(xlabel="time since the flow started (s)", ylabel="packets",
           title=f"Fig. {spec['figure']}: {style(cc)['label']} through a {queue_pkts}-packet shaper queue, "
                 f"10 Mbit/s\n({trial.parent.name}/{trial.name}): no congestion event")
    ax2 = ax.twinx()
    ax2.plot(q["t"] - float(prov["t0_monotonic"]), q["backlog_pkts"], color="#7f7f7f", lw=0.8,
             label="bottleneck queue")
    ax2.set_ylabel("queue (packets)")
    paper_throughput(ax, run, cc, cond)
    ax.set_ylim(bottom=0)
    ax2.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    handles = [h for a in (ax, ax2) for h in a.get_legend_handles_labels()[0]]
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    return run.save(fig, f"fig{spec['figure']}_mismatch")


@draws("sweeps")
def sweeps(run: Run) -> list[Path]:
    """Beyond the report: throughput of both algorithms over random loss (at 0 ms) and over one-way
    delay (at 0 % loss), with the point where Westwood+ overtakes CUBIC marked. Points are the
    cells' trimmed means; whiskers span the smallest and largest trial."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    cells = run.cells_by_cc()
    specs = run.reference["sweeps"]
    drawn = {name: wm.sweep(cells, spec) for name, spec in specs.items()}
    drawn = {k: v for k, v in drawn.items() if any(p.mean[cc] is not None for p in v for cc in CCS)}
    if not drawn:
        return []
    fig, axes = plt.subplots(1, len(drawn), figsize=(5.5 * len(drawn), 3.8), squeeze=False)
    for ax, (name, points) in zip(axes[0], drawn.items(), strict=True):
        spec = specs[name]
        for cc in CCS:
            pts = [p for p in points if p.mean[cc] is not None]
            aggs = [cells.by_key[(cc, p.cond)]["metrics"][ww.GOODPUT] for p in pts]
            st = style(cc)
            ax.errorbar([p.x for p in pts], [a["mean"] for a in aggs],
                        yerr=[[a["mean"] - a["min"] for a in aggs], [a["max"] - a["mean"] for a in aggs]],
                        color=st["color"], marker=st["marker"], capsize=3, label=st["label"])
        for c in wm.crossovers(points):
            ax.axvline(c["at"], color="grey", ls=":", lw=1)
            ax.annotate(f"{cc_label(c['to'])} ahead\nfrom ~{c['at']:.2g}", (c["at"], ax.get_ylim()[1]),
                        fontsize=7, va="top", ha="left", xytext=(3, -3), textcoords="offset points")
        ax.set(xlabel=f"{spec['axis'].removesuffix('_pct').removesuffix('_ms')} ({spec['unit']})",
               ylabel="throughput (kbit/s)", title=f"10 Mbit/s, 50-packet queue: {name} sweep")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return run.save(fig, "sweeps")
