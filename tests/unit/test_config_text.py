"""A paper config holds the paper's numbers, never ours: a claim's `why` and a bar's reason may quote
the paper (its statements, tables, quoted numbers), the config's own settings and bar values, but no
number measured here, which would go stale with the next run and read as decided in advance
(measured numbers are generated into verdict.md). The claims' texts and the statements are the
paper's words: their numbers are in the paper's text."""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from configuration import CHECKOUT
from configuration.load import paper_names
from experiments import load_paper

PAPERS = paper_names()
# A number not part of a name (rtt50, fig3, M_t), a unit may follow it (440ms), a version (2.6.25)
# is one token.
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
SMALL = 10          # whole counts and ordinals ("two flows", "5 trials", "Figure 3") are no measurement
YEARS = range(1990, 2031)       # a citation's year


def plain(tok: str) -> bool:
    """A count, an ordinal or a year: a whole number that is no measurement."""
    return tok.isdigit() and (int(tok) <= SMALL or int(tok) in YEARS)


def numbers(text: str) -> Iterator[str]:
    for tok in NUMBER.findall(text):
        tok = tok.rstrip(".,")
        if tok.count(".") >= 2:              # a version (Linux 2.6.22, ns-3.37), never a measurement
            continue
        yield tok


def value(tok: str) -> float:
    """'60,000' and '60000', '0.70' and '0.7' are one number."""
    if re.fullmatch(r"\d{1,3}(,\d{3})+", tok):
        tok = tok.replace(",", "")
    return float(tok.replace(",", "."))


def leaves(node: Any, skip: frozenset[str] = frozenset()) -> Iterator[Any]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k not in skip:
                yield from leaves(v, skip)
    elif isinstance(node, list):
        for v in node:
            yield from leaves(v, skip)
    else:
        yield node


def pool(data: dict[str, Any]) -> set[float]:
    """The numbers a config may quote: every setting and value it holds, bar values included, and the
    paper's words (claim texts, statements, table titles), but not the explanations being checked."""
    out: set[float] = set()
    for leaf in leaves(data, skip=frozenset({"why", "history", "against", "tried", "parameters"})):
        if isinstance(leaf, bool):
            continue
        if isinstance(leaf, int | float):
            out.add(float(leaf))
        elif isinstance(leaf, str):
            out.update(value(t) for t in numbers(leaf))
    return out


def explanations(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for claim in (data.get("reference") or {}).get("claims") or []:
        if claim.get("why"):
            yield f"claim {claim['id']}: why", claim["why"]
        for name, bar in (claim.get("bars") or {}).items():
            yield f"claim {claim['id']}: bar {name}", bar["why"]


# A reason may show its working on the paper's numbers: "a × b = c" (or / + -), each operand allowed,
# the result printed to its own precision.
UNIT = r"(?:\s*[A-Za-z%]+(?:/s)?)?"
WORKING = re.compile(rf"(\d[\d.,]*){UNIT}\s+([×x*/+−-])\s+(\d[\d.,]*){UNIT}\s*=\s*(\d[\d.,]*)")
OPS = {"×": float.__mul__, "x": float.__mul__, "*": float.__mul__, "/": float.__truediv__,
       "+": float.__add__, "-": float.__sub__, "−": float.__sub__}


def worked(text: str, allowed: set[float]) -> set[float]:
    """Results of the working a text shows on allowed numbers, where the arithmetic is right."""
    out: set[float] = set()
    for a, op, b, c in WORKING.findall(text):
        a, b, c = a.rstrip(".,"), b.rstrip(".,"), c.rstrip(".,")
        known = {x for x in (a, b) if plain(x) or value(x) in allowed}
        if len(known) < 2 and a != b:
            continue
        got, printed = OPS[op](value(a), value(b)), value(c)
        step = 10.0 ** -(len(c.split(".")[1]) if "." in c else 0)
        if abs(got - printed) <= step / 2 + 1e-9:
            out.add(printed)
    return out


def foreign_numbers(data: dict[str, Any]) -> list[str]:
    allowed = pool(data)
    out = []
    for where, text in explanations(data):
        ok = allowed | worked(text, allowed)
        alien = sorted({t for t in numbers(text) if not plain(t) and value(t) not in ok}, key=value)
        if alien:
            out.append(f"{where}: {', '.join(alien)}")
    return out


@pytest.mark.parametrize("paper", PAPERS)
def test_no_why_or_bar_reason_quotes_a_number_of_ours(paper: str) -> None:
    assert foreign_numbers(load_paper(paper).data) == []


def test_a_measured_number_in_a_why_is_refused() -> None:
    data = {"reference": {"claims": [
        {"id": "x", "text": "CUBIC 456.2 ms", "why": "ours is 443.7 ms, below the paper's 456.2",
         "bars": {"tol": {"value": 7, "why": "twice the 3.4 ms range of our first run"}}}]}}
    assert foreign_numbers(data) == ["claim x: why: 443.7", "claim x: bar tol: 3.4"]
    data["reference"]["claims"][0]["why"] = "Table 2 holds ours beside the paper's 456.2 ms (figure 3)."
    data["reference"]["claims"][0]["bars"]["tol"]["why"] = "the paper prints one decimal: 7 ms is 1.5 % of 456.2"
    assert foreign_numbers(data) == ["claim x: bar tol: 1.5"]
    # working shown on the paper's numbers is no number of ours; wrong arithmetic is
    data["reference"]["claims"][0]["bars"]["tol"]["why"] = "the paper's 456.2 ms x 1.05 = 479.01 ms"
    assert foreign_numbers(data) == ["claim x: bar tol: 1.05, 479.01"]     # 1.05 is not the paper's
    data["reference"]["claims"][0]["text"] = "CUBIC 456.2 ms, about 5 % (a factor 1.05)"
    assert foreign_numbers(data) == []
    data["reference"]["claims"][0]["bars"]["tol"]["why"] = "the paper's 456.2 ms x 1.05 = 481.3 ms"
    assert foreign_numbers(data) == ["claim x: bar tol: 481.3"]


def _paper_text(data: dict[str, Any]) -> str | None:
    src = data.get("source")
    path = (CHECKOUT / src).resolve() if src else None
    if path is None or not path.exists():
        return None
    texts = [p.read_text(errors="replace") for p in path.parent.glob("*.txt")
             if p.name == path.name or _same_paper(p, path)]
    return "\n".join(texts)


def _same_paper(p: Path, source: Path) -> bool:
    """Another rendering of the same paper, as the papers' README lists it (same short name)."""
    readme = source.parent / "README.md"
    if not readme.exists():
        return False
    short = {m.group(1): m.group(2) for m in re.finditer(r"\| (\S+\.txt) \|.*\| (\w+) \|", readme.read_text())}
    return short.get(p.name) is not None and short.get(p.name) == short.get(source.name)


@pytest.mark.parametrize("paper", PAPERS)
def test_claims_and_statements_quote_numbers_the_paper_prints(paper: str) -> None:
    data = load_paper(paper).data
    text = _paper_text(data)
    if text is None:
        pytest.skip(f"the paper's text ({data.get('source')}) is not beside this checkout")
    printed = {value(t) for t in numbers(text)}
    ref = data.get("reference") or {}
    bad = []
    for what, words in [*((f"claim {c['id']}", c["text"]) for c in ref.get("claims") or [] if not c.get("beyond")),
                        *((f"statement ({s['source']})", s["text"]) for s in ref.get("statements") or [])]:
        alien = sorted({t for t in numbers(words) if not plain(t) and value(t) not in printed}, key=value)
        if alien:
            bad.append(f"{what}: {', '.join(alien)}")
    assert bad == []
