"""figures/REPORT.md: every paper's result set of one profile in one document.

Per paper: its scorecard (the paper's claims; this project's own checks apart), each claim with its
verdict, how many comparisons held, failed, were within the trials' noise or not measured, the
closest comparison's margin against its noise, a why for every claim not reproduced; whether the
result set is stale against the paper's current config or lacks archived raw trials; each table
beside the paper's values, the figures with their captions (analysis/report/captions.py), and the provenance
summary. It reads result sets only (figures/<paper>/<profile>/), so it regenerates from committed
reference results; analysis/report/html_report.py shows the same pieces as a page for a browser.

`python -m analysis.report.report --profile full` writes figures/REPORT.md; other profiles write
figures/REPORT-<profile>.md, so a quick run never overwrites the committed reference report.
"""
from __future__ import annotations

import argparse
import sys
from functools import cache
from pathlib import Path
from typing import Any

from analysis import staleness
from analysis.report import claims_markdown, robustness_table
from analysis.report.against_reference import current_spec
from analysis.report.captions import caption
from analysis.report.rejudge import archive_folder, archived
from analysis.resultset import ResultSet, ResultSetError, load
from configuration import CHECKOUT
from configuration.load import CONFIG_DIR, NOT_PAPERS, PaperConfig
from experiments import load_paper


def report_path(figures: Path, profile: str) -> Path:
    return figures / ("REPORT.md" if profile == "full" else f"REPORT-{profile}.md")


def papers() -> list[str]:
    return sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if p.stem not in NOT_PAPERS)


@cache
def config(paper: str) -> PaperConfig:
    """config/<paper>.yaml, read and validated once per report (a paper's pieces each need it)."""
    return load_paper(CONFIG_DIR / f"{paper}.yaml")


def load_sets(figures: Path, profile: str) -> dict[str, ResultSet | None]:
    """Every paper's result set of the profile, None where there is none (or it is unreadable)."""
    sets: dict[str, ResultSet | None] = {}
    for name in papers():
        root = figures / name / profile
        try:
            sets[name] = load(root) if root.is_dir() else None
        except ResultSetError as exc:
            print(f"warning: {exc}", file=sys.stderr)
            sets[name] = None
    return sets


def beyond_claims(paper: str) -> set[str]:
    """The claims config/<paper>.yaml marks `beyond: true`: this project's, not the paper's."""
    claims = config(paper).data.get("reference", {}).get("claims", [])
    return {c["id"] for c in claims if c.get("beyond")}


def split(name: str, rs: ResultSet) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The result set's verdicts: the paper's claims, and this project's own (marked in the verdict
    or in the current config)."""
    beyond = beyond_claims(name)
    vs = list(rs.verdicts.values())
    extra = [v for v in vs if v.get("beyond") or v["claim"] in beyond]
    return [v for v in vs if v not in extra], extra


def paper_scorecard(name: str, rs: ResultSet) -> str:
    mine, extra = split(name, rs)
    text = claims_markdown.scorecard(mine)
    return text + (f" (beyond the paper: {claims_markdown.scorecard(extra)})" if extra else "")


def warnings(name: str, rs: ResultSet) -> list[str]:
    """Stale results and missing raw trials, said where the claims are."""
    cfg = config(name)
    out = [f"- **{line}**" for line in staleness.result_set_lines(rs.provenance, f"config/{name}.yaml", cfg.sha256,
                                                                  current_spec(cfg, rs.profile))]
    if rs.profile == "full" and not archived(name, rs.profile):
        out.append(f"- **No raw trials archived** ({archive_folder(name, rs.profile)} holds none): these verdicts "
                   "cannot be recomputed from committed trials (verdict.md says how they were made).")
    return out


def figures_of(name: str, rs: ResultSet) -> list[tuple[Path, str | None]]:
    """The result set's figures, each with its caption (None: no drawing code declares it)."""
    reference = config(name).data.get("reference", {})
    return [(fig, caption(name, fig.stem, reference)) for fig in rs.figures()]


def text_figures(rs: ResultSet) -> list[Path]:
    """The figures the paper prints as text, ours as Markdown tables (fig*.md)."""
    return sorted(rs.root.glob("fig*.md"))


def provenance_lines(prov: dict[str, Any]) -> list[str]:
    if not prov:
        return ["(no provenance summary in this result set)"]
    checks = prov.get("fidelity_checks", {})
    failing = {k: v for k, v in checks.items() if v.get("fail")}
    rtt = prov.get("base_rtt_ms_after_calibration")
    out = [
        f"- Trials: {prov.get('trials_valid')} valid of {prov.get('trials_expected')} planned; "
        f"{prov.get('trials_rerun', 0)} needed a rerun ({prov.get('invalid_attempts_rerun', 0)} invalid attempts); "
        f"never valid: {', '.join(prov.get('trials_never_valid') or []) or 'none'}.",
        "- Kernel: " + ", ".join(f"{k} ({n} trials)" for k, n in prov.get("kernels", {}).items())
        + "; ran in " + ", ".join(f"{k} ({n})" for k, n in prov.get("where", {}).items()) + ".",
    ]
    out += [f"- {cc}: {'; '.join(impls)}" for cc, impls in prov.get("congestion_controls", {}).items()]
    out += [f"- Simulated: {sim} ({n} trials)." for sim, n in prov.get("simulators", {}).items()]
    out.append(f"- Fidelity checks over the valid trials: {len(checks)} kinds"
               + (f", failing in some: {', '.join(f'{k} ({v})' for k, v in failing.items())}" if failing
                  else ", none failed") + ".")
    if rtt:
        out.append(f"- Idle base RTT after calibration: {rtt[0]} to {rtt[1]} ms.")
    return out


def overall(sets: dict[str, ResultSet | None]) -> dict[str, int]:
    """The papers' claims (not this project's own) by verdict, over every result set."""
    out: dict[str, int] = {}
    for name, rs in sets.items():
        for k, n in (claims_markdown.tally(split(name, rs)[0]) if rs else {}).items():
            out[k] = out.get(k, 0) + n
    return out


def sources(profile: str, sets: dict[str, ResultSet | None]) -> str:
    """The result sets a report is made from, named one by one."""
    found = [f"`figures/{name}/{profile}/`" for name, rs in sets.items() if rs]
    return ", ".join(found) if found else "no result set"


RULE = ("A comparison holds or fails only when its margin exceeds the noise of its trials (the larger "
        "min-max range of the cells it reads), otherwise it is within the noise; a claim is reproduced "
        "when every comparison holds, not reproduced when its headline comparison does not hold (it "
        "fails or is within the noise) or no more hold than fail, partly otherwise, not evaluated when "
        "nothing could be judged or its headline was not measured "
        "([docs/verdicts.md](../docs/verdicts.md)). Each paper's README lists every statement of the "
        "paper with the claim that judges it or why none does.")


def render(profile: str, figures: Path, sets: dict[str, ResultSet | None]) -> str:
    out = [f"# tcprepro: reproduction report ({profile} profile)", "",
           f"Generated by `python -m analysis.report.report --profile {profile}` from {sources(profile, sets)} "
           "(`tcprepro diff` compares any two result sets, or one with the paper's numbers).", "",
           RULE, "",
           f"**Overall, the papers' claims: {claims_markdown.scorecard(overall(sets))}.**", "",
           "| paper | scorecard |", "|---|---|"]
    for name, rs in sets.items():
        out.append(f"| {name} | {paper_scorecard(name, rs) if rs else 'no results for this profile'} |")
    for name, rs in sets.items():
        title = config(name).data.get("title", name)
        out += ["", f"## {name}: {title}", ""]
        if rs is None:
            out.append(f"No result set at figures/{name}/{profile}/: run the workflow with this profile.")
            continue
        mine, extra = split(name, rs)
        here = f"{name}/{profile}"             # this paper's verdict.md and figures, from REPORT.md
        out += [f"Scorecard: {paper_scorecard(name, rs)}.", ""]
        flagged = warnings(name, rs)
        if flagged:
            out += [*flagged, ""]
        out += ["### Claims", "", *claims_markdown.table(mine), ""]
        if any(v["verdict"] != "reproduced" for v in mine):
            out += ["Why, for each claim not reproduced:", "", *claims_markdown.whys(mine, here)]
        if extra:
            out += ["### Beyond the paper", "", *claims_markdown.table(extra), "", *claims_markdown.whys(extra, here)]
        if (doc := robustness_table.load(figures, name, profile)) is not None:
            out += robustness_table.lines(doc, "###")
        out += ["### Tables beside the paper", ""]
        for table in rs.tables:
            md = rs.root / f"{table}.md"
            out += [md.read_text().strip() if md.exists() else f"({table}.md missing)", ""]
        out += ["### Figures", ""]
        # a figure the paper prints as text (fig*.md, Westwood+'s Fig 1 listing) is a table, in figure order
        for fig, text in sorted([*figures_of(name, rs), *((t, None) for t in text_figures(rs))],
                                key=lambda f: f[0].stem):
            if fig.suffix == ".md":
                out += [fig.read_text().strip(), ""]
                continue
            out += [f"![{fig.stem}]({fig.relative_to(figures).as_posix()})", ""]
            out += [f"*{fig.stem}*: {text}", ""] if text else []
        out += ["### Provenance", "", *provenance_lines(rs.provenance),
                "", f"Full verdict with every comparison: [{name}/{profile}/verdict.md]({name}/{profile}/verdict.md)."]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.report.report", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--figures", type=Path, default=CHECKOUT / "figures", help="default: figures/")
    a = ap.parse_args(argv)
    path = report_path(a.figures, a.profile)
    path.write_text(render(a.profile, a.figures, load_sets(a.figures, a.profile)))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
