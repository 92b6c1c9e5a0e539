"""The browser report (analysis/report/html_report.py), built from the committed full-profile result sets and
read in a real headless Chromium (Debian's, config/test-packages.txt; Playwright drives it): every
image loads, every link resolves offline, every claim of every verdicts.json is on the page with its
verdict, and the tallest figure shows whole.

`TCPREPRO_REPORT_SCREENSHOTS=docs/report-screenshots` also writes the screenshots docs/usage.md
links (the landing page, one paper's section), each under 300 KB.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from playwright.sync_api import Page, sync_playwright

from analysis.report import html_report

REPO = Path(__file__).resolve().parents[2]
PAPERS = sorted(p.parent.parent.name for p in (REPO / "figures").glob("*/full/verdicts.json"))
CHROMIUM = Path("/usr/bin/chromium")
# No browser download, no network: Debian's Chromium as it is, told to stay offline and quiet.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 900}
MAX_SCREENSHOT = 300_000


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Page, Path]]:
    if not CHROMIUM.exists():
        pytest.fail(f"no {CHROMIUM}: `make test-deps` installs Debian's chromium (config/test-packages.txt)")
    out = tmp_path_factory.mktemp("report") / "report-full.html"
    assert html_report.main(["--profile", "full", "--figures", str(REPO / "figures"), "--out", str(out)]) == 0
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(out.as_uri(), wait_until="load")
        yield page, out
        browser.close()


def test_every_figure_loads(report: tuple[Page, Path]) -> None:
    page, _ = report
    images = page.evaluate("Array.from(document.images, i => [i.alt, i.complete, i.naturalWidth])")
    broken = [alt for alt, complete, width in images if not complete or width == 0]
    assert not broken, f"images that did not load: {broken}"
    committed = sorted(p.stem for paper in PAPERS for p in (REPO / "figures" / paper / "full").glob("*.png"))
    assert sorted(alt for alt, _, _ in images) == committed


def test_no_link_is_broken_offline(report: tuple[Page, Path]) -> None:
    """An in-page fragment names an element of the page; any other link is a file that exists."""
    page, _ = report
    links: list[list[Any]] = page.evaluate("""Array.from(document.querySelectorAll('a[href]'), a => {
        const href = a.getAttribute('href');
        return [href, a.href, href.startsWith('#') ? document.getElementById(decodeURIComponent(href.slice(1))) !== null
                                                   : null];
    })""")
    assert len(links) > 100
    broken = [href for href, _, found in links if found is False]
    assert not broken, f"fragments the page lacks: {broken[:10]}"
    for href, url, found in links:
        if found is None:
            parts = urlsplit(url)
            assert parts.scheme == "file", f"{href}: not a file, no use offline"
            assert Path(unquote(parts.path)).exists(), f"{href}: {parts.path} does not exist"


def test_every_claim_is_on_the_page_with_its_verdict(report: tuple[Page, Path]) -> None:
    page, _ = report
    shown = page.evaluate("""Object.fromEntries(Array.from(document.querySelectorAll('tr[id^="claim-"]'),
        tr => [tr.id, [tr.dataset.verdict, tr.querySelector('.verdict').textContent, tr.checkVisibility()]]))""")
    expected = {f"claim-{paper}-{v['claim']}": v["verdict"] for paper in PAPERS
                for v in json.loads((REPO / "figures" / paper / "full" / "verdicts.json").read_text())}
    assert len(expected) > 70
    wrong = {cid: (verdict, shown.get(cid)) for cid, verdict in expected.items()
             if shown.get(cid) != [verdict, verdict, True]}
    assert not wrong, f"claims missing or with another verdict (expected, shown): {wrong}"


def test_the_tallest_figure_shows_whole(report: tuple[Page, Path]) -> None:
    """Within the page's width, at its own aspect ratio, no box around it clipping it, and its top
    and bottom edges on screen when scrolled to (nothing covers them)."""
    page, _ = report
    page.evaluate("""() => {
        const height = img => img.getBoundingClientRect().height;
        window.tallest = Array.from(document.images).reduce((a, b) => height(b) > height(a) ? b : a);
    }""")
    fit = page.evaluate("""() => {
        const img = window.tallest, r = img.getBoundingClientRect(), doc = document.documentElement;
        const clippers = [];
        for (let el = img.parentElement; el && el !== doc; el = el.parentElement) {
            const s = getComputedStyle(el);
            if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
            const b = el.getBoundingClientRect();
            if (b.top > r.top + 0.5 || b.bottom < r.bottom - 0.5 || b.left > r.left + 0.5 || b.right < r.right - 0.5)
                clippers.push(el.tagName + '.' + el.className);
        }
        return {alt: img.alt, left: r.left, right: r.right, width: r.width, height: r.height,
                natural: img.naturalHeight / img.naturalWidth, scrollWidth: doc.scrollWidth,
                viewport: window.innerWidth, clippers: clippers};
    }""")
    assert fit["height"] > VIEWPORT["height"], fit           # a figure taller than the window: the case at stake
    assert fit["left"] >= 0 and fit["right"] <= fit["scrollWidth"] <= fit["viewport"], fit
    assert fit["height"] / fit["width"] == pytest.approx(fit["natural"], rel=0.01), fit
    assert not fit["clippers"], fit
    for edge in ("top", "bottom"):
        seen = page.evaluate(f"""() => {{
            const img = window.tallest;
            img.scrollIntoView({{block: '{"start" if edge == "top" else "end"}'}});
            const r = img.getBoundingClientRect();
            const y = '{edge}' === 'top' ? r.top + 2 : r.bottom - 2;
            return document.elementFromPoint(r.left + r.width / 2, y) === img && y >= 0 && y <= window.innerHeight;
        }}""")
        assert seen, f"{fit['alt']}: its {edge} edge is not on screen when scrolled to"


def test_a_link_into_a_papers_verdict_opens_it(report: tuple[Page, Path]) -> None:
    """The whys link an investigation's section of verdict.md, which the page keeps folded."""
    page, _ = report
    link = page.locator('#ledbat a[href^="#ledbat-verdict-beyond-the-paper"]').first
    target = page.locator(f"[id='{(link.get_attribute('href') or '#')[1:]}']")
    assert not target.is_visible()
    link.click()
    target.wait_for(state="visible", timeout=5000)


def test_screenshots(report: tuple[Page, Path], tmp_path: Path) -> None:
    """The landing page and one paper's section, small enough to commit (docs/report-screenshots/)."""
    from PIL import Image

    page, _ = report
    folder = Path(os.environ.get("TCPREPRO_REPORT_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    shots = {"landing.png": None, "paper-section.png": "ledbat"}
    for name, section in shots.items():
        if section:
            page.evaluate(f"document.getElementById('{section}').scrollIntoView()")
        path = folder / name
        page.screenshot(path=str(path))
        if path.stat().st_size > MAX_SCREENSHOT:       # text and flat colours: a palette loses nothing visible
            Image.open(path).convert("RGB").quantize(colors=64).save(path, optimize=True)
        assert path.stat().st_size < MAX_SCREENSHOT, (name, path.stat().st_size)
