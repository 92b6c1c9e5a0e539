"""The robustness table of a paper (analysis/robustness.py's file): each claim's verdict under every
alternative of the open choices, and one word per claim, for verdict.md and REPORT.md."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis import robustness, robustness_lane
from experiments import load_paper

SAME = "="
NOT_RUN = "not run"
ACROSS = "n/a"
OTHER_BUILD = "†"
SHORT = "‡"
PACKED = "§"
ONE_BUILD = "°"


def load(figures: Path, paper: str, profile: str) -> dict[str, Any] | None:
    """The paper's robustness file, with `beyond`: its claims that are this project's own checks
    (config `beyond: true`), counted apart from the paper's."""
    path = robustness.output_path(figures, paper, profile)
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    doc["beyond"] = [c["id"] for c in load_paper(paper).data.get("reference", {}).get("claims", []) if c.get("beyond")]
    return doc


def cell(doc: dict[str, Any], alt: dict[str, Any], claim: str) -> str:
    ref, got = doc["reference"][claim], alt["verdicts"].get(claim, robustness.NOT_RUN)
    if got == robustness.NOT_RUN:
        return NOT_RUN
    if got == robustness.ACROSS:
        return ACROSS
    marks = checks(alt, claim)
    checked = robustness.control(alt, claim)
    control = checks(alt.get("same_build", {}), claim)       # of the twins the control reads
    if got == ref:
        if checked == "flips":
            return SAME + marks + f" (**{alt['same_build']['verdicts'][claim]}**{ONE_BUILD}{control} on one build)"
        return SAME + marks
    return (f"**{got}**" + (OTHER_BUILD if robustness.other_build(alt, claim) else "")
            + (ONE_BUILD + control if checked == "flips" else "") + marks
            + (f" (= on one build{control})" if checked == "holds" else ""))


def checks(judged: dict[str, Any], claim: str) -> str:
    """The marks of a judging (an alternative's, or its same-build control's) for the claim: fewer
    valid trials than planned, claims input other code computed."""
    return (SHORT if robustness.short(judged, claim) else "") + (PACKED if robustness.packed(judged, claim) else "")


def marked(alts: list[dict[str, Any]], check: str) -> str:
    """The cells behind a mark, per alternative and per same-build control ("" when none)."""
    parts = []
    for a in alts:
        for where, judged in (("", a), (" (same-build control)", a.get("same_build", {}))):
            if judged.get(check, {}).get("cells"):
                parts.append(f"`{robustness.key(a)}`{where}: {', '.join(judged[check]['cells'])}")
    return "; ".join(parts)


def favoured_flips(doc: dict[str, Any]) -> dict[str, list[str]]:
    """{claim: [alternative]} for every flip under an alternative the paper's text favours at least
    as much as the reading taken: these go into README's status, not only verdict.md. An alternative
    whose cells for the claim ran on another build than the reference's carries the mark, as does
    one whose compact cells' claims input other code computed; a same-build control says whether the
    flip holds on one build (ONE_BUILD) or not."""
    out: dict[str, list[str]] = {}
    for claim in doc["reference"]:
        keys = [robustness.key(a) + (OTHER_BUILD if robustness.other_build(a, claim) else "")
                + (ONE_BUILD if robustness.control(a, claim) == "flips" else "")
                + (PACKED if robustness.packed(a, claim) else "")
                + (" (not on one build)" if robustness.control(a, claim) == "holds" else "")
                for a in robustness.flips(doc, claim) if a["favoured"]]
        if keys:
            out[claim] = keys
    return out


def flip_text(doc: dict[str, Any], claim: str, keys: list[str]) -> str:
    """A favoured flip as README and verdict.md name it: the claim, the alternatives, and whether a
    second sample of the reference alone flips it too (then the flip is no evidence of the choice)."""
    sample = "; a second sample of the reference alone flips it too" if robustness.rests_on_sample(doc, claim) else ""
    return f"{claim} (under {', '.join(keys)}{sample})"


def sample_cell(doc: dict[str, Any], claim: str) -> str:
    got = doc["second_sample"]["verdicts"].get(claim, robustness.NOT_RUN)
    if got == robustness.NOT_RUN:
        return NOT_RUN
    return SAME if got == doc["reference"][claim] else f"**{got}**"


def lane_cell(doc: dict[str, Any], claim: str) -> str:
    """The claim's verdict on each lane of the cross-validation, bold where they differ."""
    got = doc["lane"]["verdicts"].get(claim)
    if not got:
        return NOT_RUN
    if robustness_lane.flips(doc, claim):
        return "**" + "; ".join(f"{run}: {v}" for run, v in got.items()) + "**"
    return f"both: {next(iter(got.values()))}"


def lane_flip_text(doc: dict[str, Any], claim: str) -> str:
    return f"{claim} ({', '.join(f'{run}: {v}' for run, v in doc['lane']['verdicts'][claim].items())})"


def lane_lines(doc: dict[str, Any]) -> list[str]:
    """What the lane column compares and which claims the lane moves."""
    lane = doc["lane"]
    moved = [c for c in doc["reference"] if robustness_lane.flips(doc, c)]
    runs = " and ".join(f"`{r['run']}` ({r['what']}; kernel {', '.join(r['kernels'])})" for r in lane["runs"])
    return [f"The lane column sets the two lanes side by side, each lane's trials judged alone by this "
            f"paper's analysis (docs/robustness.md, \"The lane\"): {runs}, on the "
            f"{len(lane['runs'][0]['cells'])} cells the cross-validation measured on both with one procedure "
            f"(config/crossval.yaml: \"{lane['comparison']}\"), which need not be the reference's today. "
            "A claim is judged there only when it "
            f"lacks no value on either lane: {len(lane['verdicts'])} of {len(doc['reference'])} do; for the "
            f"others (`{NOT_RUN}`) the lane is not known. "
            + "".join(f"`{r['run']}` kept its cells' statistics but not its trials' values, so no claim has a noise "
                      "estimate there. " for r in lane["runs"] if not r["values_kept"])
            + "".join(f"`{r['run']}` has fewer than {robustness_lane.PLANNED} valid trials in "
                      + ", ".join(f"{c} ({n})" for c, n in r["short"].items()) + ". "
                      for r in lane["runs"] if r.get("short"))
            + (f"The lane moves {len(moved)}: {', '.join(lane_flip_text(doc, c) for c in moved)}."
               if moved else "The lane moves none of them."), ""]


def sample_lines(doc: dict[str, Any]) -> list[str]:
    """What the second sample is and which claims it moves."""
    s = doc["second_sample"]
    moved = [c for c in doc["reference"] if robustness.rests_on_sample(doc, c)]
    return [f"Second sample: {s['cells']} of the reference's {s['of']} cells measured again with trials "
            f"{s['trials'][0]}-{s['trials'][-1]} (other seeds: other flow start phases, delay jitter and kernel "
            f"randomness, testbed/variation.py) on {', '.join(s['builds']['measured'])}, against "
            f"{', '.join(s['builds']['reference'])}; each claim that reads a re-measured cell judged with those "
            f"cells in place of the reference's. A claim whose verdict moves with the sample alone "
            f"(`{robustness.SAMPLE}`) has a verdict the trials' spread decides: its flips under an alternative "
            f"are no evidence of the choice. "
            + (f"It moves {len(moved)}: {', '.join(moved)}." if moved else "It moves none."), ""]


def lines(doc: dict[str, Any], heading: str = "##") -> list[str]:
    """The section: what it is, the table (claims x alternatives), and the flips the text favours."""
    alts = doc["alternatives"]
    claims = list(doc["reference"])
    beyond = set(doc.get("beyond", ()))
    own = [c for c in claims if c not in beyond]
    robust = sum(robustness.summary(doc, c) == "robust" for c in own)
    extra = [c for c in claims if c in beyond]
    counted = (f"The paper's claims robust to every alternative: {robust} of {len(own)}"
               + (f"; this project's own checks beyond the paper: "
                  f"{sum(robustness.summary(doc, c) == 'robust' for c in extra)} of {len(extra)}" if extra else ""))
    out = [f"{heading} Robustness to what the paper leaves open", "",
           f"Each claim judged again with one open choice flipped at a time (config reference.choices, "
           f"docs/robustness.md): the cells an alternative touches measured under it, every other cell "
           f"the reference's own. `=`: the same verdict as the reference; a verdict in bold: it flips; "
           f"`{NOT_RUN}`: cells the claim reads not measured under it yet; `{ACROSS}`: the claim itself "
           f"compares the two readings (it reads an investigation's cell that stands in under the "
           f"alternative). Alternatives marked * are ones the paper's text favours at least as much as "
           f"the reading taken. Rows marked (beyond) are this "
           f"project's own checks, not the paper's claims. {counted}.", ""]
    if not alts:
        return [*out, "This paper's open choices have no alternatives to run.", ""]
    sampled, laned = "second_sample" in doc, "lane" in doc
    head = (["second sample"] * sampled + ["lane"] * laned
            + [f"`{robustness.key(a)}`{'*' if a['favoured'] else ''}" for a in alts])
    out += ["| claim | reference | " + " | ".join(head) + " | summary |",
            "|---|---|" + "---|" * len(head) + "---|"]
    for c in claims:
        name = f"{c} (beyond)" if c in beyond else c
        row = (([sample_cell(doc, c)] if sampled else []) + ([lane_cell(doc, c)] if laned else [])
               + [cell(doc, a, c) for a in alts])
        out.append(f"| {name} | {doc['reference'][c]} | " + " | ".join(row) + f" | {robustness.summary(doc, c)} |")
    measured = [f"`{robustness.key(a)}`: {a['touched'] - len(a['not_measured'])} of {a['touched']}"
                + (f" ({len(a['unread'])} of them read by no claim, which the workflow does not measure)"
                   if a.get("unread") else "") for a in alts]
    out += ["", "Cells measured under each alternative, of the reference's cells it touches: "
            + "; ".join(measured) + ".", ""]
    if sampled:
        out += sample_lines(doc)
    if laned:
        out += lane_lines(doc)
    other = [a for a in alts if a.get("other_build", {}).get("cells")]
    if other:
        out += [f"{OTHER_BUILD}: the flip reads cells measured under the alternative on another kernel (or "
                "simulator build) than the reference cells they replace, so it may come from the build, not "
                "the choice; docs/robustness.md has what re-measuring reference cells on the new build found. "
                + "; ".join(f"`{robustness.key(a)}`: {len(a['other_build']['cells'])} cells on "
                            f"{', '.join(a['builds']['measured'])} against {', '.join(a['builds']['reference'])}"
                            for a in other) + ".", ""]
    controlled = [a for a in alts if a.get("same_build")]
    if controlled:
        out += [f"Same-build control: where the reference's second sample ran on the alternative's own build, "
                "the alternative is judged again against it (the twins beside the second sample, all on one "
                f"kernel; docs/robustness.md). {ONE_BUILD}: the claim's verdict moves there too, so the flip is "
                "the choice's, not the kernel's; \"= on one build\": it does not, so the flip is no evidence of "
                "the choice (it may be the kernel's or the sample's); it still counts as a flip here. "
                + "; ".join(f"`{robustness.key(a)}`: on {', '.join(a['same_build']['build'])}" for a in controlled)
                + ".", ""]
    short = marked(alts, "short")
    if short:
        out += [f"{SHORT}: the claim reads a cell measured under the alternative with fewer valid trials than "
                "the five planned (the others failed their fidelity checks), so its verdict there rests on "
                f"fewer trials than the reference's; after {ONE_BUILD} or inside \"on one build\", a cell the "
                "same-build control reads: " + short + ".", ""]
    packed = marked(alts, "packed_elsewhere")
    if packed:
        out += [f"{PACKED}: the claim reads a cell measured under the alternative that is archived compactly "
                "(its claims input, not its raw traces) and whose claims input other code than this checkout's "
                "computed, so its verdict there is that code's reading of the traces; measuring the cell again "
                f"reads them with this code (docs/robustness.md); after {ONE_BUILD} or inside \"on one "
                "build\", a cell the same-build control reads: " + packed + ".", ""]
    flips = favoured_flips(doc)
    if flips:
        out += ["Verdicts that flip under an alternative the paper's text favours at least as much as ours: "
                + "; ".join(flip_text(doc, c, k) for c, k in flips.items()) + ".", ""]
    return out
