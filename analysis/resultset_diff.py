"""Compare two result sets of one paper (a fresh run, committed reference results, or the paper's
own numbers) and list every number that moved beyond its tolerance and every claim whose verdict
changed.

Tolerances are data: `reference.tables.<table>.columns.<column>.tolerance` in config/<paper>.yaml,
`{abs: x}` and/or `{rel: f}` (a move within either is no move), optionally per profile
(`{abs: 3, smoke: {abs: 12}}`: a 30-s smoke trial moves more than a five-trial mean). A column
without one is compared exactly, and the diff says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from analysis.resultset import Key, ResultSet


@dataclass(frozen=True)
class Tolerance:
    abs: float | None = None
    rel: float | None = None

    @classmethod
    def from_config(cls, spec: dict[str, Any] | None, profile: str) -> Tolerance:
        spec = dict(spec or {})
        override = spec.get(profile)
        if isinstance(override, dict):
            spec = override
        return cls(spec.get("abs"), spec.get("rel"))

    def allows(self, a: float, b: float) -> bool:
        """a within the tolerance of b, the reference side (the committed reference, or the paper):
        a relative tolerance is a fraction of b, the same either way of it, never of the larger."""
        d = abs(a - b)
        if self.abs is None and self.rel is None:
            return d <= 1e-9 * max(1.0, abs(a), abs(b))
        return ((self.abs is not None and d <= self.abs)
                or (self.rel is not None and d <= self.rel * abs(b)))

    def __str__(self) -> str:
        parts = ([f"±{self.abs:g}"] if self.abs is not None else []) + (
            [f"±{100 * self.rel:g} %"] if self.rel is not None else [])
        return " or ".join(parts) or "exact (no tolerance in config)"


def tolerances(reference: dict[str, Any], profile: str) -> dict[tuple[str, str], Tolerance]:
    """{(table, column): Tolerance} from a paper config's `reference` section."""
    return {(tid, col): Tolerance.from_config(spec.get("tolerance"), profile)
            for tid, table in reference.get("tables", {}).items()
            for col, spec in table.get("columns", {}).items()}


@dataclass
class Moved:
    key: Key
    a: float | None
    b: float | None
    tolerance: Tolerance

    def line(self, a_label: str, b_label: str) -> str:
        table, cell, col = self.key
        if self.a is None or self.b is None:
            side = a_label if self.a is None else b_label
            return f"{table} {cell} {col}: not measured in {side} ({a_label} {_fmt(self.a)}, {b_label} {_fmt(self.b)})"
        return (f"{table} {cell} {col}: {a_label} {_fmt(self.a)}, {b_label} {_fmt(self.b)} "
                f"(moved {self.a - self.b:+.4g}; tolerance {self.tolerance})")


@dataclass
class VerdictChange:
    claim: str
    a: str
    b: str


@dataclass
class Diff:
    a_label: str
    b_label: str
    compared: int = 0
    moved: list[Moved] = field(default_factory=list)
    one_sided: list[Moved] = field(default_factory=list)
    verdicts: list[VerdictChange] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)      # a side built from trials its config no longer describes

    @property
    def missing_in_a(self) -> list[Moved]:
        """Numbers B has and A lacks: measured against a reference, what the run failed to measure."""
        return [m for m in self.one_sided if m.a is None or not math.isfinite(m.a)]

    def exit_code(self, strict: bool = False, complete: bool = False) -> int:
        """1 when a claim's verdict changed, or (complete) A lacks a number B has, or (strict) any
        number moved; else 0."""
        failed = (self.verdicts or (complete and self.missing_in_a)
                  or (strict and (self.moved or self.one_sided)))
        return 1 if failed else 0

    def to_json(self) -> dict[str, Any]:
        """Everything `render` lists, unabridged, as JSON values: a number not measured or not finite
        is null, a tolerance without abs and rel means an exact comparison."""
        def number(m: Moved) -> dict[str, Any]:
            table, cell, column = m.key
            return {"table": table, "cell": cell, "column": column, "a": _finite(m.a), "b": _finite(m.b),
                    "tolerance": {"abs": m.tolerance.abs, "rel": m.tolerance.rel}}
        return {"a": self.a_label, "b": self.b_label, "compared": self.compared,
                "moved": [number(m) for m in self.moved], "one_sided": [number(m) for m in self.one_sided],
                "verdicts_changed": [{"claim": v.claim, "a": v.a, "b": v.b} for v in self.verdicts],
                "stale": list(self.stale)}

    def render(self, limit: int = 200) -> str:
        out = [f"{self.a_label} against {self.b_label}: {self.compared} numbers compared, "
               f"{len(self.moved)} moved beyond their tolerance, {len(self.one_sided)} measured on one side only, "
               f"{len(self.verdicts)} claim verdicts changed"]
        if self.stale:
            out += ["", "stale results (trials the paper's config now describes otherwise, or that cannot be "
                    "checked against it):"]
            out += [f"  {line}" for line in self.stale]
        if self.verdicts:
            out += ["", "claims whose verdict changed:"]
            out += [f"  {v.claim}: {self.a_label} {v.a}, {self.b_label} {v.b}" for v in self.verdicts]
        if self.moved:
            out += ["", "numbers that moved:"]
            out += [f"  {m.line(self.a_label, self.b_label)}" for m in self.moved[:limit]]
        if self.one_sided:
            out += ["", "numbers on one side only:"]
            out += [f"  {m.line(self.a_label, self.b_label)}" for m in self.one_sided[:limit]]
            if len(self.one_sided) > limit:
                out.append(f"  ... and {len(self.one_sided) - limit} more")
        return "\n".join(out) + "\n"


def _finite(v: float | None) -> float | None:
    return v if v is not None and math.isfinite(v) else None


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.6g}"


def diff(a: ResultSet, b: ResultSet, tol: dict[tuple[str, str], Tolerance],
         a_label: str = "A", b_label: str = "B") -> Diff:
    """Every number of either side, and every claim of either side, compared."""
    if a.paper != b.paper:
        raise ValueError(f"{a.root} is {a.paper}, {b.root} is {b.paper}: a diff compares one paper")
    out = Diff(a_label, b_label)
    for key in sorted(set(a.measured) | set(b.measured)):
        va, vb = a.measured.get(key), b.measured.get(key)
        if va is None and vb is None:
            continue
        t = tol.get((key[0], key[2]), Tolerance())
        if va is None or vb is None or not (math.isfinite(va) and math.isfinite(vb)):
            out.one_sided.append(Moved(key, va, vb, t))
            continue
        out.compared += 1
        if not t.allows(va, vb):
            out.moved.append(Moved(key, va, vb, t))
    for claim in sorted(set(a.verdicts) | set(b.verdicts)):
        va_ = a.verdicts.get(claim, {}).get("verdict", "absent")
        vb_ = b.verdicts.get(claim, {}).get("verdict", "absent")
        if va_ != vb_:
            out.verdicts.append(VerdictChange(claim, va_, vb_))
    return out
