"""A config holds inputs, never results: every number its prose states (YAML comments and the
free-text strings of `why`, `history`, notes) is one of the config's own data (a setting, a bar, a
reference value of the paper's, in the same or a scaled unit), stands in the paper's words quoted in
it (`text`, `title`, quotation marks in prose), names a place (section, figure, table, issue,
reference [n], a version, a year), is a count up to ten, a protocol constant (CONSTANTS), is part of
the citation heading the file or of the sentence a bar's `history` opens with (its earlier value),
or sits in a sentence that shows its arithmetic ("="); a measured number of ours is none of these."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from configuration.load import CONFIG_DIR, paper_dir, paper_names

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?![\w.]*\w)")
# a number that names a place (or the next of a list of places) rather than stating a quantity
PLACE = re.compile(r"(?i)(?:sections?|sec\.|§|fig(?:ure)?s?\.?|tables?|eq(?:uation)?s?\.?|issues?|#|"
                   r"\[|A\.|footnotes?|pages?|p\.|tests?|RFC|step|erratum|lines?)"
                   r"\s*(?:[\d.]+[a-z]?\s*(?:,|and|or|to|-|/)\s*)*$")
QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”')
PAPER_KEYS = {"text", "quote", "paper_says", "title"}   # the paper's own words
PLACE_KEYS = {"source", "section"}                      # where in the paper: sections, figures
# bytes of a full-size segment's payload, an IP packet, an Ethernet frame; Linux's default receive
# buffer; CUBIC's beta in 1024ths (Linux's) and its fraction; 802.11b's top rate (Mbit/s)
CONSTANTS = {1448, 1500, 1514, 87380, 1024, 717, 819, 0.7, 0.8, 11}
VERSION = re.compile(r"(?i)(?:ns-3|linux|kernel|python|debian)\s*$")


def _value(token: str) -> float | None:
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


def _walk(node: Any, key: str = "") -> Any:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(k, "")
            yield from _walk(v, str(k))
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, key)
    else:
        yield key, node


def _comments(raw: str) -> list[str]:
    """The comments: text after a # that stands outside quotes and after a blank, a block of
    whole-line comments as one text (its sentences run across lines)."""
    out: list[str] = []
    block = False
    for line in raw.splitlines():
        if line.lstrip().startswith("#"):
            text = line.lstrip()[1:].strip()
            if block:
                out[-1] += " " + text
            else:
                out.append(text)
            block = True
            continue
        block = False
        quote = None
        for i, ch in enumerate(line):
            if quote:
                quote = None if ch == quote else quote
            elif ch in "\"'" and (i == 0 or not line[i - 1].isalnum()):
                quote = ch
            elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
                out.append(line[i + 1:])
                break
    return out


def _known(data: dict[str, Any]) -> set[float]:
    """Every number the config's data holds: numeric settings and bars, numbers inside identifiers
    and short strings (cell ids, units, ranges), and every number of the paper's quoted words."""
    known: set[float] = set()
    for key, leaf in _walk(data):
        if isinstance(leaf, bool):
            continue
        if isinstance(leaf, int | float):
            known.add(float(leaf))
        elif isinstance(leaf, str):
            pieces = [leaf] if key in PAPER_KEYS or " " not in leaf.strip() else QUOTED.findall(leaf)
            for piece in pieces:
                known.update(v for v in (_value(t) for t in re.findall(r"\d+(?:[.,]\d+)*", piece)) if v is not None)
    return known


def _traceable(value: float, known: set[float]) -> bool:
    if value.is_integer() and 0 <= value <= 10:
        return True
    scaled = {round(k * f, 9) for k in known for f in (1, 100, 0.01, 1000, 0.001, 1 / 8, 8)}
    return round(value, 9) in scaled or round(-value, 9) in scaled or any(
        round(1 - k, 9) == round(value, 9) or round(100 - 100 * k, 9) == round(value, 9) for k in known)


def untraceable(raw: str) -> list[str]:
    """Every number in a config's prose that none of its data accounts for, with its context."""
    data = yaml.safe_load(raw)
    known = _known(data) | CONSTANTS
    heading = re.search(r"(?m)^paper:", raw)
    body = raw[heading.start():] if heading else raw               # after the citation heading the file
    prose = _comments(body) + [leaf for key, leaf in _walk(data) if isinstance(leaf, str)
                               and key not in PAPER_KEYS | PLACE_KEYS and " " in leaf.strip()]
    history = [leaf for key, leaf in _walk(data) if key == "history" and isinstance(leaf, str)]
    found = []
    for text in prose:
        bare = QUOTED.sub(lambda m: " " * len(m.group()), text)
        sentences = [(m.start(), m.end()) for m in re.finditer(r"[^.;]+(?:[.;](?!\s)[^.;]*)*", bare)]
        for m in NUMBER.finditer(bare):
            value = _value(m.group())
            sentence = next((bare[a:b] for a, b in sentences if a <= m.start() < b), "")
            before = bare[:m.start()]
            if (value is None or 1990 <= value <= 2029 or PLACE.search(before) or VERSION.search(before)
                    or "=" in sentence or _traceable(value, known)
                    or (text in history and not re.search(r"[.;]\s", before))):
                continue
            found.append(f"{m.group()!r} in ...{bare[max(0, m.start() - 60):m.end() + 30]}...")
    return found


@pytest.mark.parametrize("paper", paper_names())
def test_config_prose_states_no_measured_number(paper: str) -> None:
    raw = (paper_dir() / f"{paper}.yaml").read_text()
    assert untraceable(raw) == []


# The configs beside the papers': the workflow's settings and the cross-validation's comparisons and
# explanations (their measured numbers sit in docs/measurements.md and the generated tables).
OTHER_CONFIGS = ("workflow.yaml", "crossval.yaml")


@pytest.mark.parametrize("name", OTHER_CONFIGS)
def test_workflow_and_crossval_configs_state_no_measured_number(name: str) -> None:
    assert untraceable((CONFIG_DIR / name).read_text()) == []


def test_a_planted_measured_number_is_found() -> None:
    raw = (Path(paper_dir()) / "westwood.yaml").read_text()
    planted = raw.replace("reference:\n", "reference:\n  # our CUBIC reached 8731.4 kbit/s in Test 1\n", 1)
    assert any("8731.4" in f for f in untraceable(planted))
    assert len(untraceable(planted)) == len(untraceable(raw)) + 1
