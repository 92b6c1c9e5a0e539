"""The LEDBAT paper's claims, judged on the cells' trimmed means (analysis/ledbat.py's metrics).

Each claim in config/ledbat.yaml (`reference.claims`) has an id naming one function here; a claim
is a set of comparisons, one line each with the numbers (analysis/verdicts.py: held and failed
lines give reproduced / partly / not reproduced; none gives not evaluated). Thresholds are the
claim's own fields in the config. A claim compares the cells its `cases` field names (the 100-MB
cells of the paper in full, the 30-MB ones in quick): the first case of the list that was run.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from analysis.compare import cell_value
from analysis.verdicts import Verdict, judge

LINEAR, MIN1, NF2, NF1, MDVAR = "ledbat", "ledbat-min1", "ledbat-md-nf2", "ledbat-md-nf1", "ledbat-mdvar"
MD = (NF2, NF1, MDVAR)
LABEL = {LINEAR: "linear", MIN1: "min. 1 pkt/RTT", NF2: "MD-NF2", NF1: "MD-NF1", MDVAR: "MDvar"}


@dataclass
class Cells:
    """Measured cells (at least one valid trial, ledbat metrics merged) by (cc, case)."""

    by_key: dict[tuple[str, str], dict[str, Any]]
    params: dict[str, dict[str, Any]]               # case -> its matrix parameters

    @classmethod
    def from_cells(cls, cells: dict[str, dict[str, Any]], params: dict[str, dict[str, Any]]) -> Cells:
        by_key, cases = {}, {}
        for cell_id, p in params.items():
            cases[p["case"]] = p
            cell = cells.get(cell_id)
            if cell and cell.get("n_valid", 0) > 0:
                by_key[(p["cc"], p["case"])] = cell
        return cls(by_key, cases)

    def value(self, cc: str, case: str, metric: str, stat: str = "mean") -> float | None:
        return cell_value(self.by_key.get((cc, case)), metric, stat)

    def first_case(self, ccs: tuple[str, ...], cases: list[str]) -> str | None:
        """The first of `cases` in which any of `ccs` was measured."""
        return next((c for c in cases if any((cc, c) in self.by_key for cc in ccs)), None)

    def cases_of(self, cc: str) -> list[str]:
        return sorted(case for k, case in self.by_key if k == cc)


Evaluator = Callable[[Cells, dict[str, Any]], Verdict]


def _missing(claim: dict[str, Any], what: str) -> Verdict:
    return judge(claim, [], [], [what])


def latecomer_advantage(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Linear decrease: the second flow takes most of the link while both run, and finishes first."""
    case = cells.first_case((LINEAR,), claim["cases"])
    if case is None:
        return _missing(claim, f"linear decrease not measured in {', '.join(claim['cases'])}")
    held, failed = [], []
    share = cells.value(LINEAR, case, "late_share")
    lo = float(claim["late_share_min"])
    if share is not None:
        line = f"{case}: the late-comer's share of the link while both run {share:.2f} (bar {lo:g})"
        (held if share >= lo else failed).append(line)
    d1, d2 = cells.value(LINEAR, case, "bulk0.done_s"), cells.value(LINEAR, case, "bulk1.done_s")
    if d1 is not None and d2 is not None:
        line = f"{case}: flow 2 done at {d2:.1f} s, flow 1 at {d1:.1f} s (paper, 100 MB: 106 and 171 s)"
        (held if d2 < d1 else failed).append(line)
    return judge(claim, held, failed, [])


def _fair(cells: Cells, claim: dict[str, Any], ccs: tuple[str, ...], cases: list[str]) -> tuple[list[str], list[str]]:
    bar = float(claim["jain_min"])
    held, failed = [], []
    for case in cases:
        for cc in ccs:
            j = cells.value(cc, case, "jain_mean")
            if j is None:
                continue
            line = f"{case}: {LABEL[cc]} Jain's index {j:.3f} (bar {bar:g})"
            (held if j >= bar else failed).append(line)
    return held, failed


def md_share_equally(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Figs 2 (40 ms): every MD variant shares the link about equally between the two flows."""
    case = cells.first_case(MD, claim["cases"])
    if case is None:
        return _missing(claim, f"no MD variant measured in {', '.join(claim['cases'])}")
    held, failed = _fair(cells, claim, MD, [case])
    return judge(claim, held, failed, [])


def mdvar_every_scenario(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """MDvar shares equally in every measured scenario (RTT, number of flows, size)."""
    cases = cells.cases_of(MDVAR)
    if not cases:
        return _missing(claim, "MDvar not measured")
    held, failed = _fair(cells, claim, (MDVAR,), cases)
    return judge(claim, held, failed, [])


def fixed_beta_unfair_rtt20(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Fig 3 (20 ms): the fixed-beta MD variants no longer share equally; MDvar still does."""
    case = cells.first_case(MD, claim["cases"])
    if case is None:
        return _missing(claim, f"no MD variant measured in {', '.join(claim['cases'])}")
    bar = float(claim["jain_min"])
    held, failed = [], []
    for cc in (NF2, NF1):
        j = cells.value(cc, case, "jain_mean")
        if j is not None:
            line = f"{case}: {LABEL[cc]} Jain's index {j:.3f} (unequal: below {bar:g})"
            (held if j < bar else failed).append(line)
    h, f = _fair(cells, claim, (MDVAR,), [case])
    return judge(claim, held + h, failed + f, [])


def md_underutilises(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Section 5.2: MD empties the queue periodically, so it uses the link less than linear."""
    held, failed, missing = [], [], []
    for case in claim["cases"]:
        lin = cells.value(LINEAR, case, "utilisation")
        if lin is None:
            continue
        for cc in MD:
            u = cells.value(cc, case, "utilisation")
            if u is None:
                missing.append(f"{case}: {LABEL[cc]} not measured")
                continue
            line = f"{case}: {LABEL[cc]} utilisation {u:.3f} vs linear {lin:.3f}"
            (held if u < lin else failed).append(line)
        break
    return judge(claim, held, failed, missing or ([] if held or failed else ["linear not measured"]))


def linear_better_large(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Fig 5: per number of flows, at the largest transfer measured for both, linear's mean sum rate
    is above MDvar's."""
    held, failed, missing = [], [], []
    by_n: dict[int, list[tuple[int, str]]] = {}
    for case, p in cells.params.items():
        sweep = int(p.get("n_cross", 0)) == 0 and int(p["delay_ms"]) == int(claim["delay_ms"])
        if sweep and (LINEAR, case) in cells.by_key and (MDVAR, case) in cells.by_key:
            by_n.setdefault(int(p["n"]), []).append((int(p["bytes"]), case))
    for n in sorted(by_n):
        size, case = max(by_n[n])
        lin, var = cells.value(LINEAR, case, "sum_rate_mbit_s"), cells.value(MDVAR, case, "sum_rate_mbit_s")
        if lin is None or var is None:
            missing.append(f"{case}: no completion for linear or MDvar")
            continue
        line = f"{n} flows x {size / 1e6:g} MB: linear {lin:.2f} vs MDvar {var:.2f} Mbit/s mean sum rate"
        (held if lin > var else failed).append(line)
    if not by_n:
        missing.append("no load measured with both linear and MDvar")
    return judge(claim, held, failed, missing)


def _fig6_share(cells: Cells, claim: dict[str, Any], cc: str) -> tuple[str | None, float | None]:
    case = cells.first_case((cc,), claim["cases"])
    return case, (cells.value(cc, case, "ledbat_share_vs_tcp") if case else None)


def linear_does_not_yield(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Fig 6 upper: standard linear LEDBAT keeps a large share of the link against the TCP flow."""
    case, share = _fig6_share(cells, claim, LINEAR)
    if share is None:
        return _missing(claim, "Fig 6 linear cell not measured")
    bar = float(claim["yield_share"])
    line = f"{case}: LEDBAT's share, second half of the overlap with TCP, {share:.2f} (it yields below {bar:g})"
    return judge(claim, [line] if share >= bar else [], [] if share >= bar else [line], [])


def min1_yields(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Fig 6 lower: with a decrease of at least one packet per RTT, LEDBAT yields to TCP."""
    case, share = _fig6_share(cells, claim, MIN1)
    if share is None:
        return _missing(claim, "Fig 6 min. decrease cell not measured")
    bar = float(claim["yield_share"])
    _, lin = _fig6_share(cells, claim, LINEAR)
    vs = f", linear {lin:.2f}" if lin is not None else ""
    line = f"{case}: LEDBAT's share, second half of the overlap with TCP, {share:.2f}{vs} (it yields below {bar:g})"
    return judge(claim, [line] if share < bar else [], [] if share < bar else [line], [])


def completion_times(cells: Cells, claim: dict[str, Any]) -> Verdict:
    """Section 5.2's numbers (100 MB, 40 ms): last flow done at 171 s under every scheme; linear:
    flow 2 done first, at 106 s; MD: flow 1 done at 134-158 s. Within `tolerance_pct`."""
    case = claim["case"]
    tol = float(claim["tolerance_pct"]) / 100
    held, failed, missing = [], [], []

    def within(label: str, v: float | None, lo: float, hi: float) -> None:
        if v is None:
            missing.append(f"{label}: not measured")
            return
        ok = lo * (1 - tol) <= v <= hi * (1 + tol)
        paper = f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"
        (held if ok else failed).append(f"{label}: {v:.1f} s (paper {paper} s, tolerance {100 * tol:g} %)")

    for cc in (LINEAR, *MD):
        if (cc, case) not in cells.by_key:
            missing.append(f"{cc}-{case}: not run (this profile's transfers are not the paper's 100 MB)")
            continue
        within(f"{LABEL[cc]} last flow done", cells.value(cc, case, "last_done_s"), 171, 171)
        if cc == LINEAR:
            within("linear flow 2 done", cells.value(cc, case, "bulk1.done_s"), 106, 106)
        else:
            within(f"{LABEL[cc]} flow 1 done", cells.value(cc, case, "bulk0.done_s"), 134, 158)
    return judge(claim, held, failed, missing)


CLAIMS: dict[str, Evaluator] = {
    "latecomer_advantage": latecomer_advantage,
    "md_share_equally": md_share_equally,
    "mdvar_every_scenario": mdvar_every_scenario,
    "fixed_beta_unfair_rtt20": fixed_beta_unfair_rtt20,
    "md_underutilises": md_underutilises,
    "linear_better_large": linear_better_large,
    "linear_does_not_yield": linear_does_not_yield,
    "min1_yields": min1_yields,
    "completion_times": completion_times,
}


def evaluate(claims: list[dict[str, Any]], cells: Cells) -> list[Verdict]:
    return [CLAIMS[c["id"]](cells, c) for c in claims]
