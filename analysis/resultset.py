"""A result set: what one paper's run left in figures/<paper>/<profile>/, read back.

Every table's CSV (measured and paper value per cell and column), the claims' verdicts
(verdicts.json) and the provenance summary. The diff and the report read result sets only, so
they work on committed reference results without the raw trials.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from analysis.verdicts import OUTCOMES, VERDICTS

Key = tuple[str, str, str]          # (table, cell, column)


class ResultSetError(ValueError):
    """A directory that is not a paper's result set; the message says what is missing."""


@dataclass
class ResultSet:
    root: Path
    paper: str
    profile: str
    measured: dict[Key, float | None] = field(default_factory=dict)
    paper_values: dict[Key, float | None] = field(default_factory=dict)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def tables(self) -> list[str]:
        return sorted({k[0] for k in self.measured})

    def figures(self) -> list[Path]:
        return sorted(self.root.glob("*.png"))

    def scorecard(self, only: set[str] | None = None) -> dict[str, int]:
        """How many claims (of `only`, when given) got each verdict."""
        out: dict[str, int] = {}
        for cid, v in self.verdicts.items():
            if only is None or cid in only:
                out[v["verdict"]] = out.get(v["verdict"], 0) + 1
        return out


def _json(path: Path, kind: type) -> Any:
    """A JSON file of the expected kind, or a ResultSetError naming it (never a traceback)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultSetError(f"{path}: not readable JSON ({exc}); regenerate the result set") from None
    if not isinstance(data, kind):
        raise ResultSetError(f"{path}: not a JSON {'list' if kind is list else 'object'}; regenerate the result set")
    return data


def _verdicts(path: Path) -> list[dict[str, Any]]:
    """verdicts.json as analysis.verdicts writes it: one object per claim with its id, a verdict of the
    rule's four, and its comparisons by outcome as lists of text."""
    out = _json(path, list)
    for i, v in enumerate(out):
        problem = ("not an object" if not isinstance(v, dict) else
                   "no claim id" if not isinstance(v.get("claim"), str) else
                   f"verdict {v.get('verdict')!r} is none of {', '.join(VERDICTS)}" if v.get("verdict") not in VERDICTS
                   else next((f"'{o}' is not a list of text" for o in OUTCOMES if not (
                       isinstance(v.get(o, []), list) and all(isinstance(x, str) for x in v.get(o, [])))), ""))
        if problem:
            raise ResultSetError(f"{path}: entry {i}: {problem}; regenerate the result set")
    return out


def _number(text: str) -> float | None:
    return float(text) if text not in ("", None) else None


def load(root: Path | str) -> ResultSet:
    """figures/<paper>/<profile>/ as written by `python -m analysis.<paper>`."""
    root = Path(root)
    verdicts_path = root / "verdicts.json"
    if not verdicts_path.exists():
        raise ResultSetError(f"{root}: no verdicts.json: not a paper's result set (figures/<paper>/<profile>/); "
                             "run the workflow or `python -m analysis.<paper> --profile P` first")
    prov_path = root / "provenance.json"
    provenance = _json(prov_path, dict) if prov_path.exists() else {}
    rs = ResultSet(root, provenance.get("paper") or root.parent.name, provenance.get("profile") or root.name,
                   provenance=provenance)
    rs.verdicts = {v["claim"]: v for v in _verdicts(verdicts_path)}
    for path in sorted(root.glob("*.csv")):
        with path.open() as fh:
            reader = csv.DictReader(fh)
            columns = [c.removesuffix("_measured") for c in (reader.fieldnames or []) if c.endswith("_measured")]
            if not columns or "cell" not in (reader.fieldnames or []):
                continue                        # a CSV that is not a comparison table
            for row in reader:
                for col in columns:
                    key = (path.stem, row["cell"], col)
                    rs.measured[key] = _number(row[f"{col}_measured"])
                    rs.paper_values[key] = _number(row.get(f"{col}_paper", ""))
    return rs


def paper_side(rs: ResultSet) -> ResultSet:
    """The paper's own numbers as a result set: its table values, and every claim as it stated it."""
    claims = {cid: {**v, "verdict": "reproduced", "held": [], "failed": [], "indistinguishable": [], "missing": []}
              for cid, v in rs.verdicts.items()}
    return ResultSet(Path(f"paper:{rs.paper}"), rs.paper, "paper", measured=dict(rs.paper_values),
                     paper_values=dict(rs.paper_values), verdicts=claims)
