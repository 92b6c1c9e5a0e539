"""Beyond the report: the base delay Test 3's numbers need.

At 5 % loss each way and no added delay, our Westwood+ lies above the report's 6156 kbit/s, while
CUBIC's trials straddle the report's 5637. The report does not give its path's base delay
(two laptops, a switch, the shaping router, dummynet on the server); ours at "0 ms" is the 10 Mbit/s
link's serialisation and little else, and at 5 % loss a round trip that short lets a window of a few
packets fill the link. The cells `t3-d*` add 1 to 5 ms each way. This module draws both algorithms'
throughput against the one-way delay with the report's numbers, and says at which delays each lands
on its number (the claim's bar over the whole trial range, as `near` judges it). It is a search of
one parameter against the report's numbers, a fit only if some delay put both on them (the section
says whether one does).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from analysis.report.captions import draws
from analysis.report.paper_run import cc_label
from analysis.verdicts import Measure, near
from analysis.westwood import claims as ww
from analysis.westwood.investigation import cell_text
from analysis.westwood.run import CCS, Run, style

CLAIM = "westwood_ahead_test3"
SECTION = "Beyond the report: the base delay Test 3's numbers need"


@dataclass
class Point:
    """Test 3 at one added one-way delay (Test 3 itself at 0 ms)."""

    cond: str
    delay_ms: float
    m: dict[str, Measure | None]
    span: dict[str, tuple[float, float] | None]      # the trials' lowest and highest throughput


def points(run: Run) -> list[Point]:
    cells = run.cells_by_cc()
    out = []
    for cond in sorted({c for _, c in cells.params if c == "t3" or re.fullmatch(r"t3-d\d+", c)}):
        if not any(cells.m(cc, cond, ww.GOODPUT) for cc in CCS):
            continue
        aggs = {cc: ((cells.by_key.get((cc, cond)) or {}).get("metrics") or {}).get(ww.GOODPUT) for cc in CCS}
        out.append(Point(cond, float(cells.params[("cubic", cond)]["delay_ms"]),
                         {cc: cells.m(cc, cond, ww.GOODPUT) for cc in CCS},
                         {cc: (float(a["min"]), float(a["max"])) if a else None for cc, a in aggs.items()}))
    return sorted(out, key=lambda p: p.delay_ms)


def _report(run: Run) -> tuple[dict[str, float], float]:
    values = run.reference["tables"]["throughput"]["values"]
    claim = next(c for c in run.reference["claims"] if c["id"] == CLAIM)
    return {cc: float(values[f"{cc}-t3"][0]) for cc in CCS}, float(claim["bars"]["tolerance_pct"]["value"])


def on_report(run: Run, p: Point) -> dict[str, str]:
    """Per algorithm: held (the whole trial range within the claim's bar of the report's number),
    failed, indistinguishable, or missing."""
    ref, tol = _report(run)
    return {cc: near(p.cond, "", p.m[cc], ref[cc], tol).outcome for cc in CCS}


@draws("investigation_test3", title=lambda ref, stem: SECTION)
def fig_test3(run: Run) -> list[Path]:
    """Throughput per algorithm against the added one-way delay at 5 % loss, whiskers the trial
    range, the report's two numbers dotted with the claim's band. Drawn when a t3-d* cell was run."""
    # deferred: matplotlib takes about half a second to import, and only drawing needs it
    import matplotlib.pyplot as plt

    found = points(run)
    if not any(p.cond != "t3" for p in found):
        return []
    ref, tol = _report(run)
    fig, ax = plt.subplots(figsize=(7, 4.6))
    for cc in CCS:
        st = style(cc)
        pts = [p for p in found if p.m[cc] is not None and p.span[cc]]
        ys = [p.m[cc].value for p in pts]                                       # type: ignore[union-attr]
        lo = [max(0.0, y - p.span[cc][0]) for p, y in zip(pts, ys, strict=True)]     # type: ignore[index]
        hi = [max(0.0, p.span[cc][1] - y) for p, y in zip(pts, ys, strict=True)]     # type: ignore[index]
        ax.errorbar([p.delay_ms for p in pts], ys, yerr=[lo, hi], fmt="o-", color=st["color"], capsize=3,
                    label=st["label"])
        ax.axhline(ref[cc], color=st["color"], ls=":", lw=1.2)
        ax.axhspan(ref[cc] * (1 - tol / 100), ref[cc] * (1 + tol / 100), color=st["color"], alpha=0.12)
    ax.set(xlabel="added one-way delay, each direction (ms); 0 = Test 3 as run",
           ylabel="throughput (kbit/s, trimmed mean; whiskers: trial range)",
           title="Test 3 (10 Mbit/s, 5 % loss each way) against the path's base delay")
    ax.set_xticks([p.delay_ms for p in found], [f"{p.delay_ms:g}" for p in found])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.text(0.01, 0.02, f"dotted: the report's {ref['cubic']:.0f} and {ref['westwood']:.0f} kbit/s; "
            f"band: within {tol:g} %", transform=ax.transAxes, fontsize=7)
    fig.tight_layout()
    return run.save(fig, "investigation_test3")


def _share(m: Mapping[str, Measure | None]) -> str:
    """Westwood+'s throughput over CUBIC's."""
    c, w = m["cubic"], m["westwood"]
    return "-" if not (c and w and c.value) else f"{w.value / c.value:.2f}"


def _finding(run: Run, found: list[Point]) -> str:
    ref, _ = _report(run)
    stands = {p.cond: on_report(run, p) for p in found}
    both = [p for p in found if all(v == "held" for v in stands[p.cond].values())]
    if both:
        return ("What the cells show: " + ", ".join(f"{p.delay_ms:g} ms" for p in both) + " each way put both "
                "algorithms' throughput on the report's numbers.")
    parts = []
    for cc in CCS:
        held = [f"{p.delay_ms:g} ms" for p in found if stands[p.cond][cc] == "held"]
        where = f"at {', '.join(held)}" if held else "at none"
        parts.append(f"{cc_label(cc)} reaches its {ref[cc]:.0f} kbit/s {where}")
    shares = [float(x) for p in found if (x := _share(p.m)) != "-"]
    lead = (f" Westwood+'s throughput is {min(shares):.2f} to {max(shares):.2f} times CUBIC's over these delays, "
            f"against the report's {ref['westwood'] / ref['cubic']:.2f}.") if shares else ""
    return "What the cells show: no delay puts both numbers on the report's; " + "; ".join(parts) + "." + lead


def section(run: Run) -> list[str]:
    """verdict.md's account: per delay both throughputs, their ratio and how each stands to the
    report's number."""
    found = points(run)
    if not any(p.cond != "t3" for p in found):
        return []
    ref, tol = _report(run)
    out = [f"## {SECTION}", "",
           f"The report's Test 3 numbers are {ref['cubic']:.0f} (CUBIC) and {ref['westwood']:.0f} kbit/s (Westwood+); "
           "it does not give its path's base delay. The `t3-d*` cells add a one-way delay in each direction to "
           "Test 3 (5 % loss each way, 120 s). Figure: investigation_test3. A number is on the report's when its "
           f"whole trial range lies within {tol:g} % of it (the claim's bar).", "", _finding(run, found), "",
           f"| one-way delay added | CUBIC (kbit/s) | Westwood+ (kbit/s) | Westwood+ / CUBIC | "
           f"CUBIC vs {ref['cubic']:.0f} | Westwood+ vs {ref['westwood']:.0f} |",
           "|---|---|---|---|---|---|"]
    for p in found:
        stand = on_report(run, p)
        label = f"{p.delay_ms:g} ms" + (" (Test 3)" if p.cond == "t3" else "")
        out.append(" | ".join(["", label, cell_text(p.m["cubic"]), cell_text(p.m["westwood"]), _share(p.m),
                               stand["cubic"], stand["westwood"], ""]).strip())
    report = {cc: Measure(ref[cc], None, 0) for cc in CCS}
    out.append(f"| the report | {ref['cubic']:.0f} | {ref['westwood']:.0f} | {_share(report)} | | |")
    return [*out, ""]
