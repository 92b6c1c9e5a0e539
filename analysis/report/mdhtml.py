"""Markdown to HTML for the browser report: markdown-it-py (CommonMark and tables), raw HTML in the
text escaped, never passed through (a result set's text is data, not markup).

Two things a page made of several Markdown files needs besides: heading ids under a prefix, so the
four papers' verdicts can share one page (a heading's id is the fragment GitHub gives it,
analysis.report.claims_markdown.anchor, so the links REPORT.md and verdict.md already carry find
it), and every link mapped by the page (`Link`): to an anchor of the page, to a file beside it, or
dropped to its text when its target is in neither.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from analysis.report.claims_markdown import anchor

Link = Callable[[str], str | None]        # a link's href as written -> the page's href, or None: no link


def _wrap_table(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """A wide table scrolls inside its own box, never widening the page."""
    return '<div class="scroll"><table>\n' if tokens[idx].type == "table_open" else "</table></div>\n"


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    md.add_render_rule("table_open", _wrap_table)
    md.add_render_rule("table_close", _wrap_table)
    return md


_MD = _parser()


def _text(inline: Token) -> str:
    return "".join(c.content for c in inline.children or [] if c.type in ("text", "code_inline"))


@dataclass
class Rendered:
    html: str
    ids: set[str] = field(default_factory=set)    # every heading id the text got


def _relink(children: list[Token], link: Link) -> list[Token]:
    """The inline tokens with each link's and image's target mapped; a link mapped to None keeps
    its text only, an image mapped to None its alt text."""
    out: list[Token] = []
    dropping = False
    for tok in children:
        if tok.type == "link_open":
            href = link(str(tok.attrGet("href") or ""))
            if href is None:
                dropping = True
                continue
            tok.attrSet("href", href)
        elif tok.type == "link_close" and dropping:
            dropping = False
            continue
        elif tok.type == "image":
            src = link(str(tok.attrGet("src") or ""))
            if src is None:
                tok = Token("text", "", 0, content=tok.content)
            else:
                tok.attrSet("src", src)
        out.append(tok)
    return out


def render(text: str, link: Link, id_prefix: str = "", inline: bool = False) -> Rendered:
    """`text` as HTML: headings get id `id_prefix` + their GitHub fragment (repeats numbered as
    GitHub numbers them), links go through `link`. `inline`: one paragraph's content, no <p>."""
    env: dict[str, Any] = {}
    tokens = _MD.parseInline(text, env) if inline else _MD.parse(text, env)
    ids: set[str] = set()
    seen: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            slug = anchor(_text(tokens[i + 1]))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            hid = id_prefix + (slug if n == 0 else f"{slug}-{n}")
            tok.attrSet("id", hid)
            ids.add(hid)
        if tok.type == "inline" and tok.children:
            tok.children = _relink(tok.children, link)
    return Rendered(_MD.renderer.render(tokens, _MD.options, env), ids)
