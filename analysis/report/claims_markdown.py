"""Claims as markdown, the same in every verdict.md and in REPORT.md: a scorecard, one row per claim
(its verdict; how many comparisons held, failed, were within the trials' noise or not measured; the
closest comparison's margin against its noise), a why for every claim not reproduced, and (in
verdict.md) every comparison. Claims beyond the paper come apart, never in its scorecard.

It renders what the judges decided; the judges are each paper's own analysis/<paper>/claims.py.
Reads verdicts as analysis.verdicts.Verdict.as_dict() gives them (verdicts.json).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from analysis.verdicts import OUTCOMES, VERDICTS

LISTS = {"held": "held", "failed": "failed", "indistinguishable": "within the trials' noise",
         "missing": "not measured"}


def as_dicts(verdicts: Iterable[Any]) -> list[dict[str, Any]]:
    return [v if isinstance(v, dict) else v.as_dict() for v in verdicts]


def counts(v: dict[str, Any]) -> dict[str, int]:
    return {o: len(v.get(o) or []) for o in OUTCOMES}


def paper_claims(verdicts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [v for v in verdicts if not v.get("beyond")]


def beyond_claims(verdicts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [v for v in verdicts if v.get("beyond")]


def tally(verdicts: Iterable[dict[str, Any]]) -> dict[str, int]:
    out = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        out[v["verdict"]] = out.get(v["verdict"], 0) + 1
    return {k: n for k, n in out.items() if n}


def scorecard(verdicts: Sequence[dict[str, Any]] | dict[str, int]) -> str:
    """'9 claims: 4 reproduced, 3 partly, 2 not reproduced' (claims or a tally of them)."""
    t = verdicts if isinstance(verdicts, dict) else tally(verdicts)
    total = sum(t.values())
    if not total:
        return "no claims"
    return f"{total} claim{'' if total == 1 else 's'}: " + ", ".join(f"{t[k]} {k}" for k in VERDICTS if t.get(k))


def table(verdicts: Sequence[dict[str, Any]]) -> list[str]:
    out = ["| claim | verdict | held | failed | within noise | missing | closest comparison: margin against noise |",
           "|---|---|---|---|---|---|---|"]
    for v in verdicts:
        n = counts(v)
        closest = (v.get("closest") or "-").replace("|", "/")
        out.append(f"| {v['claim']} | **{v['verdict']}** | {n['held']} | {n['failed']} | {n['indistinguishable']} | "
                   f"{n['missing']} | {closest} |")
    return out


def whys(verdicts: Sequence[dict[str, Any]], where: str = "") -> list[str]:
    """A paragraph per claim not reproduced: what stood against it and where the evidence is, with
    a link to its investigation when it has one (`where`: the folder of the verdict.md and figures
    it is in, relative to the page that shows it; "" for verdict.md itself)."""
    out = []
    for v in verdicts:
        if v["verdict"] != "reproduced":
            link = investigation_link(v, where)
            out += [f"- **{v['claim']}** ({v['verdict']}): {v.get('why') or 'no explanation recorded'}"
                    + (f" {link}" if link else ""), ""]
    return out


def anchor(heading: str) -> str:
    """The fragment a markdown renderer (GitHub's rule) gives a heading: lower case, punctuation
    but hyphens and underscores dropped, spaces to hyphens."""
    kept = "".join(ch for ch in heading.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def investigation_link(v: dict[str, Any], where: str = "") -> str:
    """'Investigation: [section](...), figure [name](...).' for a claim that names one, else ''; an
    investigation that fitted parameters says so, with what it fitted and what speaks against it."""
    inv = v.get("investigation")
    if not inv:
        return ""
    page = f"{where}/verdict.md" if where else ""
    fig = f"{where}/{inv['figure']}.png" if where else f"{inv['figure']}.png"
    out = f"Investigation: [{inv['section']}]({page}#{anchor(inv['section'])}), figure [{inv['figure']}]({fig})."
    return out + (f" {fit_text(inv['fit'])}" if inv.get("fit") else "")


def fit_text(fit: dict[str, str]) -> str:
    """A fit named as one: parameters swept until a number matched explain nothing by themselves."""
    return (f"**This is a fit, not an explanation**: {fit['parameters'].strip()} were swept towards the paper's "
            f"numbers ({fit['tried'].strip()}). Against it: {fit['against'].strip()}")


def bar_lines(v: dict[str, Any]) -> list[str]:
    """Each bar the claim is judged by: its value, its reason, and its history when it moved after a
    run of ours."""
    out = []
    for name, bar in (v.get("bars") or {}).items():
        line = f"- bar `{name}` = {bar['value']:g}: {' '.join(str(bar['why']).split())}"
        if bar.get("history"):
            line += f" History: {' '.join(str(bar['history']).split())}"
        out.append(line)
    return out


def details(v: dict[str, Any]) -> list[str]:
    """One claim with every comparison, for verdict.md."""
    source = f" ({v['source']})" if v.get("source") else ""
    n = counts(v)
    lines = [f"### {v['claim']}: **{v['verdict']}**", "", f"> {v['text']}{source}", "",
             ", ".join(f"{n[o]} {LISTS[o]}" for o in OUTCOMES) + "."]
    if v.get("headline"):
        lines[-1] += f" Headline: {'; '.join(v['headline'])}."
    lines.append("")
    if v.get("bars"):
        lines += ["Bars, each from the paper or a rule stated without our numbers (its history where a run "
                  "of ours moved it):", *bar_lines(v), ""]
    for o in OUTCOMES:
        if v.get(o):
            lines.append(f"- {LISTS[o]}:")
            lines += [f"  - {item}" for item in v[o]]
    if v.get("why"):
        link = investigation_link(v)
        lines += ["", f"Why: {v['why']}" + (f" {link}" if link else "")]
    if v.get("note"):
        lines += ["", v["note"]]
    return [*lines, ""]


def section(verdicts: Iterable[Any], title: str = "Claims") -> list[str]:
    """verdict.md's claims: the paper's (scorecard, table, whys, every comparison), then beyond."""
    vs = as_dicts(verdicts)
    mine, extra = paper_claims(vs), beyond_claims(vs)
    out = [f"## {title}", "",
           "Each comparison holds or fails only when its margin exceeds the noise of the trials (the "
           "larger min-max range of the cells it reads); otherwise it is within the trials' noise. "
           "The rule, with its reasons: docs/verdicts.md.", "",
           f"The paper's claims: {scorecard(mine)}.", "", *table(mine), ""]
    if any(v["verdict"] != "reproduced" for v in mine):
        out += ["Why, for each claim not reproduced:", "", *whys(mine)]
    for v in mine:
        out += details(v)
    if extra:
        out += ["## Beyond the paper", "", "This project's own checks, not in the paper's scorecard: "
                f"{scorecard(extra)}.", "", *table(extra), ""]
        for v in extra:
            out += details(v)
    return out
