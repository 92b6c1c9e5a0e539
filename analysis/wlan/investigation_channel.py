"""Beyond the paper: what the downlink's gain at M_t = 2 needs (mt2_downlink_gains).

The paper's Fig. 2: from one MAC attempt to two the downlink goodput increases at the uplink's
expense, and the larger the AP buffer the more the downlink is ahead; in the model the second
attempt helps the uplink instead. The paper explains its curves by two kinds of downlink loss:
collisions, which fall as M_t grows, and the AP buffer's overflow, which grows with it as the TCP
windows inflate. If the model's channel recovers collisions too well, its uplink windows (whose
senders see every residual wireless loss) inflate at M_t = 2 already, where the paper's still did
not. The settings of `reference.beyond.mt2` change one
thing each against the model as configured, at M_t 1 and 2 and two AP buffers: channel errors
besides collisions (`fifo-fer*`: a share of full-size frames lost at every receiver, as on a real
indoor link; the MAC retries them within M_t), and capture (`fifo-capture`: stations farther from
each other than from the AP, so an overlap loses the station's frame and not the AP's). Each
setting is judged by the claim's own comparisons under the verdict rule, over the scenarios it was
run on.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.report.captions import draws
from analysis.verdicts import Comparison
from analysis.wlan.claims import DOWN, RATIO, UP, fixed, mt2_comparisons
from analysis.wlan.run import VARIANT_STYLE, Run, fit_lines

SECTION = "Beyond the paper: what the downlink's gain at M_t = 2 needs"


@dataclass
class Setting:
    variant: str
    comparisons: list[Comparison]   # the claim's own (claims.mt2_comparisons) over the scenarios it was run on

    @property
    def steps(self) -> list[Comparison]:
        """Per (scenario, Q): the downlink's rise from M_t = 1 to 2 (the claim's point)."""
        return [c for c in self.comparisons if c.where.endswith("M_t 1 -> 2") and c.text.startswith("downlink")]

    def outcome(self, where: str, what: str) -> str:
        return next((c.outcome for c in self.comparisons if c.where == where and c.text.startswith(what)), "-")

    def count(self, outcome: str) -> int:
        return sum(c.outcome == outcome for c in self.comparisons)


def _spec(run: Run) -> dict[str, Any] | None:
    return (run.reference.get("beyond") or {}).get("mt2")


def settings(run: Run) -> list[Setting]:
    """Every setting of the spec that was run at M_t 1 and 2, with the claim's comparisons on it."""
    spec = _spec(run)
    if not spec:
        return []
    cells = run.index()
    out = []
    for v in spec["variants"]:
        comps = []
        for scen in spec["scenarios"]:
            qs = [int(q) for q in spec["qs"] if all(cells.m(scen, v, int(q), mt, RATIO) for mt in (1, 2))]
            if qs:
                comps += mt2_comparisons(cells, scen, v, qs)
        if comps:
            out.append(Setting(v, comps))
    return out


@draws("investigation_mt2", title=lambda ref, stem: SECTION)
def fig_mt2(run: Run) -> list[Path]:
    """Per scenario: the down/up ratio at M_t 1 and 2 for each setting (colour) and AP buffer (line
    style), the trials' range as bars."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    found = settings(run)
    spec = _spec(run)
    if len(found) < 2 or spec is None:
        return []
    cells = run.index()
    styles = ["--", "-", ":", "-."]
    fig, axes = plt.subplots(1, len(spec["scenarios"]), figsize=(5.5 * len(spec["scenarios"]), 4.2), sharey=True)
    for ax, scen in zip(axes, spec["scenarios"], strict=True):
        for s in found:
            st = VARIANT_STYLE[s.variant]
            for i, q in enumerate(int(q) for q in spec["qs"]):
                pts = [p for p in cells.curve(scen, s.variant, q, RATIO) if p.mt in (1, 2)]
                if len(pts) < 2:
                    continue
                ax.errorbar([p.mt for p in pts], [p.mean for p in pts],
                            yerr=[[p.mean - p.low for p in pts], [p.high - p.mean for p in pts]],
                            color=st["color"], marker=st["marker"], linestyle=styles[i % len(styles)], capsize=3,
                            label=f"{st['label']}, Q = {q}")
        ax.axhline(1.0, color="k", lw=0.6)
        ax.set(xlabel="M_t (MAC transmission attempts)", xticks=[1, 2], yscale="log",
               title=f"{scen}: the paper has the ratio rise from M_t = 1 to 2")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=6.5)
    axes[0].set_ylabel("downlink / uplink goodput (trimmed mean, bars: trial range)")
    fig.suptitle("Beyond the paper: what the downlink's gain at M_t = 2 needs (mt2_downlink_gains)", fontsize=10)
    names = ",".join(s.variant for s in found)
    run.caption(fig, "investigation_channel.fig_mt2", f"{{{','.join(spec['scenarios'])}}}-{{{names}}}-q{{"
                f"{','.join(str(q) for q in spec['qs'])}}}-mt{{1,2}}")
    return run.save(fig, "investigation_mt2")


def section(run: Run) -> list[str]:
    found = settings(run)
    spec = _spec(run)
    if len(found) < 2 or spec is None:
        return []
    cells = run.index()
    qs = ", ".join(str(q) for q in spec["qs"])
    others = [f"{VARIANT_STYLE[s.variant]['label']} (`{s.variant}`)" for s in found if s.variant != "fifo"]
    out = [f"## {SECTION}", "",
           f"FIFO at Q = {qs}, M_t = 1 and 2, {' and '.join(spec['scenarios'])}: the model as configured beside "
           f"settings that change one thing each: {'; '.join(others)}. Channel errors lose that share of "
           "full-size frames at every receiver besides collisions (shorter frames proportionally fewer), each "
           "loss retried by the MAC within M_t. Figure: investigation_mt2. Each setting is judged by the "
           "claim's comparisons: from M_t = 1 to 2 the downlink goodput rises and the uplink's falls at each Q, "
           "and at M_t = 2 the ratio is higher with the larger Q, the downlink ahead at the largest.", "",
           *fit_lines(next(c for c in run.reference["claims"] if c["id"] == "mt2_downlink_gains"))]
    lines = []
    for s in found:
        label = VARIANT_STYLE[s.variant]["label"]
        rises = [c.where.removesuffix(", M_t 1 -> 2") for c in s.steps if c.outcome == "held"]
        lines.append(f"{label}: the downlink rises from M_t = 1 to 2 at {len(rises)} of {len(s.steps)} "
                     f"(scenario, Q)" + (f" ({'; '.join(rises)})" if rises else "")
                     + f"; {s.count('held')} of {len(s.comparisons)} comparisons held, {s.count('failed')} failed, "
                     f"{s.count('indistinguishable')} within the trials' noise")
    grid = len(spec["scenarios"]) * len(spec["qs"])
    held = [s for s in found if s.count("held") == len(s.comparisons)]
    whole = [VARIANT_STYLE[s.variant]["label"] for s in held if len(s.steps) == grid]
    part = [f"{VARIANT_STYLE[s.variant]['label']} (run at {len(s.steps)} of the {grid} scenario and buffer pairs)"
            for s in held if len(s.steps) < grid]
    out += ["What the cells show: " + ". ".join(lines) + ". "
            + (f"The claim's pattern holds under {', '.join(whole)}." if whole
               else "No setting gives the claim's pattern at every scenario and buffer.")
            + (f" It holds where run under {', '.join(part)}." if part else ""), ""]
    out += ["| setting | scenario | Q | ratio M_t = 1 | ratio M_t = 2 | down 1 -> 2 (pkt/s) | up 1 -> 2 | down rises "
            "| up falls |", "|---|---|---|---|---|---|---|---|---|"]
    for s in found:
        for c in s.steps:
            scen, q = c.where.removesuffix(", M_t 1 -> 2").split(", Q = ")
            m = {(k, mt): cells.m(scen, s.variant, int(q), mt, k) for k in (RATIO, DOWN, UP) for mt in (1, 2)}
            out.append(f"| {VARIANT_STYLE[s.variant]['label']} | {scen} | {q} | {fixed(m[RATIO, 1])} | "
                       f"{fixed(m[RATIO, 2])} | {fixed(m[DOWN, 1], 0)} -> {fixed(m[DOWN, 2], 0)} | "
                       f"{fixed(m[UP, 1], 0)} -> {fixed(m[UP, 2], 0)} | {c.outcome} | "
                       f"{s.outcome(c.where, 'uplink')} |")
    return [*out, ""]
