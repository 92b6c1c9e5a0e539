"""The browser report's pieces: captions from the drawing code, Markdown to HTML, where its links
point, and a profile without figures (the page itself in a browser: tests/integration/test_report_browser.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis.report import captions, html_report, mdhtml
from experiments import load_paper

REPO = Path(__file__).resolve().parents[2]
SETS = sorted(p for p in (REPO / "figures").glob("*/*") if (p / "verdicts.json").exists())


@pytest.mark.parametrize("result_set", SETS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_figure_has_a_caption_from_its_drawing_code(result_set: Path) -> None:
    paper = result_set.parent.name
    reference = load_paper(paper).data["reference"]
    missing = [p.stem for p in result_set.glob("*.png") if not captions.caption(paper, p.stem, reference)]
    assert not missing, f"no @draws declares these figures of {paper}: {missing}"


def test_a_title_from_the_config_names_the_figure_of_the_paper() -> None:
    reference = load_paper("ledbat").data["reference"]
    text = captions.caption("ledbat", "fig2_rtt40-n2-100mb", reference)
    assert text and text.startswith("Fig. 2: Two flows, multiplicative decrease, base RTT 40 ms, case rtt40-n2-100mb. ")
    assert captions.caption("ledbat", "no_such_figure", reference) is None


def test_markdown_escapes_raw_html_and_ids_headings_as_github_does() -> None:
    text = "# A: **b**\n\n## A: b\n\n`figures/<paper>/full/` and <script>x</script>\n\n| a |\n|---|\n| 1 |\n"
    out = mdhtml.render(text, lambda href: href, id_prefix="p-")
    assert out.ids == {"p-a-b", "p-a-b-1"}
    assert '<h1 id="p-a-b">' in out.html and '<h2 id="p-a-b-1">' in out.html
    assert "<code>figures/&lt;paper&gt;/full/</code>" in out.html and "&lt;script&gt;" in out.html
    assert '<div class="scroll"><table>' in out.html


def test_a_link_the_page_cannot_resolve_keeps_its_text_only() -> None:
    out = mdhtml.render("see [there](gone.md) and [here](#x)", lambda h: None if h == "gone.md" else h, inline=True)
    assert out.html == 'see there and <a href="#x">here</a>'


def test_links_point_into_the_page_or_at_files_beside_it(tmp_path: Path) -> None:
    root = tmp_path / "figures" / "ledbat" / "full"
    root.mkdir(parents=True)
    for name in ("verdict.md", "fig1.png", "table.csv"):
        (root / name).write_text("")
    out = tmp_path / "elsewhere"
    out.mkdir()
    pages = {(root / "verdict.md").resolve(): "ledbat-verdict-"}
    figs = {(root / "fig1.png").resolve(): "fig-ledbat-fig1"}
    from_report = html_report.Links(tmp_path / "figures", out, pages, figs)
    assert from_report("ledbat/full/verdict.md#beyond-the-paper") == "#ledbat-verdict-beyond-the-paper"
    assert from_report("ledbat/full/verdict.md") == "#ledbat-verdict"
    assert from_report("ledbat/full/fig1.png") == "#fig-ledbat-fig1"
    assert from_report("ledbat/full/table.csv") == "../figures/ledbat/full/table.csv"
    assert from_report("../docs/gone.md") is None
    assert from_report("#somewhere") is None                       # REPORT.md's pieces have no headings of their own
    from_verdict = html_report.Links(root, out, pages, figs, own="ledbat-verdict-")
    assert from_verdict("#why") == "#ledbat-verdict-why"
    assert from_verdict("fig1.png") == "#fig-ledbat-fig1"


def test_a_profile_without_figures_names_what_is_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert html_report.main(["--profile", "quick", "--figures", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/collateral/quick" in err and "make quick" in err and "PROFILE=full" in err
    assert not (tmp_path / "report-quick.html").exists()
