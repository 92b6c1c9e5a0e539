"""figures/report-<profile>.html: the report a reviewer opens in a browser, one self-contained file.

It shows what REPORT.md shows, made by the same functions from the same result sets
(analysis/report/report.py: verdicts.json, the tables beside the paper, provenance; analysis/report/captions.py:
each figure's caption from the code that draws it): what ran (profile, lanes, kernels), the
scorecard, every paper's claims with verdict and reason, its tables, every figure with its caption,
and its whole verdict.md. Images are embedded as data URIs and the stylesheet and the one script
inline, so the file works from a file:// URL, offline, moved or mailed; links resolve inside the
page or to files beside it, and a link whose target is in neither is kept as text.

It replaces Snakemake's `--report`, which showed figures only: REPORT.md was a download of raw
Markdown, captions were file names, tall figures lost their tops in its viewer, its landing text was
fixed whatever ran, and it needed every output of the workflow's graph for the profile to exist, so
it failed on a fresh clone. This file needs only the result sets that exist, and names the missing.

`python -m analysis.report.html_report --profile full` (make html-report PROFILE=full); the workflow builds
it after the figures of the profile it ran (rules/figures.smk).
"""
from __future__ import annotations

import argparse
import base64
import html
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from analysis.report import claims_markdown, mdhtml, ran, report, robustness_table
from analysis.resultset import ResultSet
from analysis.verdicts import VERDICTS
from configuration import CHECKOUT

STYLE = Path(__file__).with_name("report.css")
# A link into a closed <details> (a paper's verdict.md) opens it: a fragment the browser cannot
# show would otherwise land nowhere.
SCRIPT = """
function reveal() {
  var el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (!el) return;
  for (var d = el.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
  el.scrollIntoView();
}
window.addEventListener("hashchange", reveal);
document.addEventListener("DOMContentLoaded", reveal);
"""


MAKE = {"smoke": "make smoke", "quick": "make quick", "full": "make reproduce"}


def html_path(figures: Path, profile: str) -> Path:
    return figures / f"report-{profile}.html"


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def verdict_badge(verdict: str) -> str:
    return f'<span class="verdict v-{verdict.replace(" ", "-")}">{esc(verdict)}</span>'


def figure_id(paper: str, stem: str) -> str:
    return f"fig-{paper}-{stem}"


def verdict_prefix(paper: str) -> str:
    """The ids of a paper's verdict.md headings in the page: `<paper>-verdict-` + GitHub's fragment."""
    return f"{paper}-verdict-"


class Links:
    """Where a link of one Markdown source points in the page. `base`: the folder its relative links
    start from; `own`: the id prefix of the source's own headings (a bare #fragment); `pages`: the
    verdict.md files shown in the page, by path, with their id prefix; `figures`: figure files by
    path, with their id; `out`: the folder the page is written to."""

    def __init__(self, base: Path, out: Path, pages: dict[Path, str], figures: dict[Path, str],
                 own: str | None = None) -> None:
        self.base, self.out, self.pages, self.figures, self.own = base, out, pages, figures, own

    def __call__(self, href: str) -> str | None:
        parts = urlsplit(href)
        frag = unquote(parts.fragment)
        if parts.scheme or parts.netloc:
            return href                                   # not a file: left as written
        if not parts.path:
            return f"#{self.own}{frag}" if self.own is not None and frag else None
        target = (self.base / unquote(parts.path)).resolve()
        if target in self.pages:
            return f"#{self.pages[target]}{frag}" if frag else f"#{self.pages[target].rstrip('-')}"
        if target in self.figures:
            return f"#{self.figures[target]}"
        if target.exists():
            rel = Path(os.path.relpath(target, self.out)).as_posix()
            return rel + (f"#{parts.fragment}" if parts.fragment else "")
        return None


def claims_table(paper: str, verdicts: list[dict[str, Any]], verdict_ids: set[str], links: Links) -> str:
    """The claims with their verdicts, one row each (id claim-<paper>-<claim>): what the paper
    states, the verdict, the comparisons' counts, the closest comparison."""
    rows = []
    for v in verdicts:
        n = claims_markdown.counts(v)
        heading = verdict_prefix(paper) + claims_markdown.anchor(f"{v['claim']}: {v['verdict']}")
        name = f"<code>{esc(v['claim'])}</code>"
        if heading in verdict_ids:
            name = f'<a href="#{esc(heading)}">{name}</a>'
        source = f" ({esc(v['source'])})" if v.get("source") else ""
        text = f'<div class="claim-text">{esc(v.get("text", ""))}{source}</div>' if v.get("text") else ""
        closest = mdhtml.render(v.get("closest") or "-", links, inline=True).html
        rows.append(f'<tr id="claim-{esc(paper)}-{esc(v["claim"])}" data-verdict="{esc(v["verdict"])}">'
                    f"<td>{name}{text}</td><td>{verdict_badge(v['verdict'])}</td>"
                    + "".join(f'<td class="n">{n[o]}</td>' for o in ("held", "failed", "indistinguishable", "missing"))
                    + f'<td class="closest">{closest}</td></tr>')
    head = ("<tr><th>claim</th><th>verdict</th><th>held</th><th>failed</th><th>within noise</th><th>missing</th>"
            "<th>closest comparison: margin against noise</th></tr>")
    return (f'<div class="scroll"><table class="claims"><thead>{head}</thead><tbody>{"".join(rows)}</tbody>'
            "</table></div>")


def image_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def cited_by(stem: str, verdicts: list[dict[str, Any]], paper: str) -> str:
    """The claims whose reason or investigation names the figure, linked to their rows."""
    def names(v: dict[str, Any]) -> bool:
        text = f"{v.get('why') or ''} {(v.get('investigation') or {}).get('figure', '')}"
        return re.search(rf"\b{re.escape(stem)}\b", text) is not None

    named = [v["claim"] for v in verdicts if names(v)]
    if not named:
        return ""
    return " Cited by: " + ", ".join(f'<a href="#claim-{esc(paper)}-{esc(c)}"><code>{esc(c)}</code></a>'
                                     for c in named) + "."


def figure_html(paper: str, path: Path, caption: str | None, verdicts: list[dict[str, Any]], links: Links) -> str:
    text = mdhtml.render(caption, links, inline=True).html if caption else "(no caption: no drawing code declares it)"
    return (f'<figure id="{esc(figure_id(paper, path.stem))}"><img src="{image_uri(path)}" alt="{esc(path.stem)}">'
            f"<figcaption><strong>{esc(path.stem)}</strong>: {text}{cited_by(path.stem, verdicts, paper)}"
            "</figcaption></figure>")


def scorecard_table(sets: dict[str, ResultSet | None]) -> str:
    """Per paper: its claims by verdict, and this project's own checks apart."""
    head = "".join(f'<th>{verdict_badge(k)}</th>' for k in VERDICTS)
    rows = []
    for name, rs in sets.items():
        title = report.config(name).data.get("title", name)
        paper = f'<a href="#{esc(name)}">{esc(name)}</a><div class="title">{esc(title)}</div>'
        if rs is None:
            rows.append(f'<tr><td>{paper}</td><td colspan="{len(VERDICTS) + 2}">no result set for this profile'
                        "</td></tr>")
            continue
        mine, extra = report.split(name, rs)
        t = claims_markdown.tally(mine)
        rows.append(f'<tr><td>{paper}</td><td class="n">{len(mine)}</td>'
                    + "".join(f'<td class="n">{t.get(k, 0)}</td>' for k in VERDICTS)
                    + f"<td>{esc(claims_markdown.scorecard(extra)) if extra else '-'}</td></tr>")
    return (f'<div class="scroll"><table class="scorecard"><thead><tr><th>paper</th><th>claims</th>{head}'
            f"<th>beyond the paper</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def paper_section(name: str, rs: ResultSet | None, profile: str, figures: Path, out: Path) -> str:
    title = report.config(name).data.get("title", name)
    top = f'<section id="{esc(name)}"><h2>{esc(name)}: {esc(title)}</h2>'
    if rs is None:
        return top + (f"<p>No result set at <code>{esc(figures / name / profile)}</code>: run the workflow with "
                      "this profile.</p></section>")
    verdict_md = rs.root / "verdict.md"
    figs = report.figures_of(name, rs)
    pages = {verdict_md.resolve(): verdict_prefix(name)}
    fig_ids = {p.resolve(): figure_id(name, p.stem) for p, _ in figs}
    from_report = Links(figures, out, pages, fig_ids)           # REPORT.md's pieces: relative to figures/
    from_set = Links(rs.root, out, pages, fig_ids, own=verdict_prefix(name))
    verdict = (mdhtml.render(verdict_md.read_text(), from_set, id_prefix=verdict_prefix(name))
               if verdict_md.exists() else mdhtml.Rendered("<p>(no verdict.md in this result set)</p>"))
    mine, extra = report.split(name, rs)
    here = f"{name}/{profile}"

    def md(lines: list[str]) -> str:
        return mdhtml.render("\n".join(lines), from_report).html

    parts = [top, f"<p><strong>Scorecard:</strong> {esc(report.paper_scorecard(name, rs))}.</p>",
             md(report.warnings(name, rs)),
             f'<h3 id="{esc(name)}-claims">Claims</h3>', claims_table(name, mine, verdict.ids, from_report)]
    if any(v["verdict"] != "reproduced" for v in mine):
        parts += ["<p>Why, for each claim not reproduced:</p>", md(claims_markdown.whys(mine, here))]
    if extra:
        parts += [f'<h3 id="{esc(name)}-beyond">Beyond the paper</h3>',
                  claims_table(name, extra, verdict.ids, from_report), md(claims_markdown.whys(extra, here))]
    if (doc := robustness_table.load(figures, name, profile)) is not None:
        parts.append(md(robustness_table.lines(doc, "###")))
    parts.append(f'<h3 id="{esc(name)}-tables">Tables beside the paper</h3>')
    for table in rs.tables:
        path = rs.root / f"{table}.md"
        parts.append(md([path.read_text()]) if path.exists() else f"<p>({esc(table)}.md missing)</p>")
    parts.append(f'<h3 id="{esc(name)}-figures">Figures</h3>')
    parts += [md([path.read_text()]) for path in report.text_figures(rs)]
    parts += [figure_html(name, path, caption, list(rs.verdicts.values()), from_report) for path, caption in figs]
    parts += [f'<h3 id="{esc(name)}-provenance">Provenance</h3>', md(report.provenance_lines(rs.provenance)),
              f'<details id="{esc(verdict_prefix(name).rstrip("-"))}"><summary>The full verdict, every comparison '
              f"({esc(here)}/verdict.md)</summary>{verdict.html}</details></section>"]
    return "".join(parts)


def lead(profile: str, sets: dict[str, ResultSet | None]) -> str:
    """The page's first sentence: which profile, how many papers and trials, on what."""
    present = [rs for rs in sets.values() if rs is not None]
    trials = sum(int(rs.provenance.get("trials_valid") or 0) for rs in present)
    lanes = " and ".join(ran.lanes_used(sets)) or "no recorded lane"
    return (f"<p>The <strong>{esc(profile)}</strong> profile's result sets of {len(present)} of {len(sets)} papers: "
            f"{trials} valid trials or simulated runs, on {esc(lanes)}. Each paper's claims, as judged from them:</p>")


def what_ran(profile: str, sets: dict[str, ResultSet | None], links: Links) -> str:
    """Per paper, what its result set ran (its provenance), and the papers that have none."""
    lines = []
    for name, rs in sets.items():
        if rs is not None:
            per_cell = (report.config(name).data.get("profiles", {}).get(profile) or {}).get("trials")
            lines.append(ran.paper_line(name, rs, per_cell))
    missing = [n for n, rs in sets.items() if rs is None]
    if missing:
        lines += ["", "No result set for this profile: " + ", ".join(f"`figures/{n}/{profile}/`" for n in missing)
                  + "."]
    lines += ["", "Where trials run: [the lanes](../docs/usage.md#where-trials-run-the-lanes)."]
    return mdhtml.render("\n".join(lines), links).html


def page(profile: str, figures: Path, out: Path, sets: dict[str, ResultSet | None]) -> str:
    links = Links(figures, out, {}, {})
    twin = report.report_path(figures, profile).name
    body = [f"<h1>tcprepro: reproduction report, {esc(profile)} profile</h1>", lead(profile, sets),
            f"<p><strong>Overall, the papers' claims: "
            f"{esc(claims_markdown.scorecard(report.overall(sets)))}.</strong></p>",
            scorecard_table(sets),
            mdhtml.render(f"{report.RULE}\n\nThe same report in Markdown: [{twin}]({twin}).", links).html,
            '<h2 id="what-ran">What ran</h2>', what_ran(profile, sets, links),
            *(paper_section(n, rs, profile, figures, out) for n, rs in sets.items())]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>tcprepro: {esc(profile)} profile</title><style>{STYLE.read_text()}</style>"
            f"<script>{SCRIPT}</script></head><body><main>{''.join(body)}</main></body></html>\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.report.html_report", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", required=True, help="the result sets' folder name: smoke, quick, full, ...")
    ap.add_argument("--figures", type=Path, default=CHECKOUT / "figures", help="default: figures/")
    ap.add_argument("--out", type=Path, help="default: <figures>/report-<profile>.html")
    a = ap.parse_args(argv)
    out = (a.out or html_path(a.figures, a.profile)).resolve()
    sets = report.load_sets(a.figures, a.profile)
    missing = [str(a.figures / n / a.profile) for n, rs in sets.items() if rs is None]
    if len(missing) == len(sets):
        print(f"error: no result set of profile {a.profile!r}: none of {', '.join(missing)} exists; fix: run the "
              f"workflow with it first ({MAKE.get(a.profile, f'snakemake --config profile={a.profile}')}), or pick a "
              "profile whose figures exist (PROFILE=full: the committed reference)", file=sys.stderr)
        return 2
    if missing:
        print(f"note: no result set at {', '.join(missing)}: the page says so", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(a.profile, a.figures.resolve(), out.parent, sets))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
