"""The verdict rule, written once: every claim of every paper is a list of comparisons, each judged
against the noise of its trials, and the claim's verdict follows from their outcomes alone.

A comparison states what the claim needs as a signed margin (> 0: the claim's side) and the noise
it must beat: the largest min-max range, over the valid trials, of the cells it reads. It *held*
when the margin exceeds that noise, *failed* when it is below minus that noise, and is
*indistinguishable* otherwise: a difference the trials' own spread can produce neither supports nor
refutes the claim. A comparison whose cells were not run, or have fewer than MIN_TRIALS valid trials
(no noise estimate), is *missing*, as is every condition the paper states that was not measured.

The claim's verdict (docs/verdicts.md gives the reasons):
- not reproduced: a headline comparison did not hold (it failed or is within the noise), or no more
  comparisons held than failed;
- not evaluated: nothing could be judged (every comparison missing), or a headline comparison is
  missing (the claim's point was not measured);
- reproduced: every comparison held (none failed, indistinguishable or missing);
- partly: the rest.

Comparisons that read runs identical to another's (the same outputs to the last digit, e.g. two
cells of a deterministic model that the parameter no longer changes) count once: the evaluator
gives them the same `runs` key (`runs_key`), and `judge` keeps the first and names the others.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis.aggregate import trimmed_stats
from analysis.numbers import finite

MIN_TRIALS = 3                  # valid trials a cell needs for a noise estimate (and a trimmed mean)
OUTCOMES = ("held", "failed", "indistinguishable", "missing")
# A number a comparison's text prints (not one inside a name such as MD-NF1 or rtt40)
_VALUE = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?%?(?![\w.])")
VERDICTS = ("reproduced", "partly", "not reproduced", "not evaluated")


# ---------------------------------------------------------------------------------------------
# What a comparison reads: a statistic and its noise
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Measure:
    """A cell's statistic (the papers' trimmed mean over its trials) with the trials' spread.

    `noise` is the largest min-max range over the trials of the cells the value comes from, None
    when one of them has fewer than MIN_TRIALS valid trials; `n` the fewest valid trials behind it.
    """

    value: float
    noise: float | None
    n: int

    @classmethod
    def of_values(cls, values: Sequence[float]) -> Measure:
        vals = [float(v) for v in values]
        noise = max(vals) - min(vals) if len(vals) >= MIN_TRIALS else None
        return cls(float(trimmed_stats(vals)["mean"]), noise, len(vals))

    def scaled(self, k: float) -> Measure:
        """The same in another unit (k > 0): value and noise times k."""
        return Measure(self.value * k, None if self.noise is None else self.noise * k, self.n)


def measure(cell: dict[str, Any] | None, metric: str) -> Measure | None:
    """One metric of a cell.json (or a cell with merged metrics): None when absent."""
    vals = trial_values(cell, metric)
    if vals:
        return Measure.of_values(list(vals.values()))
    agg = ((cell or {}).get("metrics") or {}).get(metric) or {}
    mean = agg.get("mean")
    if not finite(mean):
        return None
    # a cell with its statistic but not its trials' values (a committed table read back): no noise
    return Measure(float(mean), None, int(agg.get("n") or (cell or {}).get("n_valid") or 0))


def trial_values(cell: dict[str, Any] | None, metric: str) -> dict[int, float]:
    """{trial: value} of one metric of a cell (its valid trials that report it)."""
    agg = ((cell or {}).get("metrics") or {}).get(metric) or {}
    trials, values = agg.get("trials") or [], agg.get("values") or []
    return {int(t): float(v) for t, v in zip(trials, values, strict=False) if finite(v)}


def per_trial(cell: dict[str, Any] | None, metrics: Sequence[str], fn: Callable[..., float | None]) -> Measure | None:
    """fn of several metrics of the same trial (paired by trial number), over the cell's trials."""
    columns = [trial_values(cell, m) for m in metrics]
    common = sorted(set.intersection(*(set(c) for c in columns))) if columns else []
    out = [v for t in common if (v := fn(*(c[t] for c in columns))) is not None and finite(v)]
    return Measure.of_values(out) if out else None


def difference(a: Measure | None, b: Measure | None) -> Measure | None:
    """a - b for measures of different cells (trials cannot be paired across cells): its noise
    is the larger of theirs, as for a comparison of the two."""
    if a is None or b is None:
        return None
    noise = None if a.noise is None or b.noise is None else max(a.noise, b.noise)
    return Measure(a.value - b.value, noise, min(a.n, b.n))


# ---------------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------------

@dataclass
class Comparison:
    """One thing a claim needs, at one of the conditions the paper states."""

    where: str                      # the condition, e.g. "50 ms, 2 flows"
    text: str                       # what is compared, with the numbers
    outcome: str                    # one of OUTCOMES
    margin: float | None = None     # > 0 on the claim's side, in `unit`
    noise: float | None = None
    unit: str = ""
    headline: bool = False
    reason: str = ""                # why a missing comparison could not be made
    runs: str | None = None         # identity of the runs it reads (runs_key): equal keys count once

    def line(self) -> str:
        out = f"{self.where}: {self.text}" + (f": {self.reason}" if self.reason else "")
        if self.margin is not None and self.noise is not None:
            out += f" [margin {_num(self.margin, signed=True)}{_unit(self.unit)} against noise {_num(self.noise)}]"
        return out + (" (headline)" if self.headline else "")

    def gap(self) -> str:
        """The line of a missing comparison with the values it prints masked: what lacks data and
        why, the same in two result sets whose measured side differs."""
        return f"{self.where}: {_VALUE.sub('#', self.text)}: {self.reason}"

    def closeness(self) -> float:
        """|margin| in units of its noise: how far from indistinguishable (small = close call)."""
        if self.margin is None or self.noise is None:
            return math.inf
        if self.noise == 0:
            return 0.0 if self.margin == 0 else math.inf
        return abs(self.margin) / self.noise


def runs_key(kind: str, *cells: dict[str, Any] | None) -> str | None:
    """An identity of what a comparison of `kind` reads: every metric's trial values of its cells,
    to the last digit. Two comparisons of one kind over runs identical to the last digit get the
    same key (and count once); None when a cell has no trial values (nothing to tell apart)."""
    parts = []
    for cell in cells:
        metrics = (cell or {}).get("metrics") or {}
        values = {m: [repr(float(v)) if finite(v) else None for v in (agg.get("values") or [])]
                  for m, agg in sorted(metrics.items()) if isinstance(agg, dict) and agg.get("values")}
        if not values:
            return None
        parts.append(values)
    blob = json.dumps([kind, parts], sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def count_once(comparisons: Iterable[Comparison]) -> list[Comparison]:
    """Comparisons with one `runs` key merged into the first (a headline if any of them is); its
    text names the conditions whose runs repeat it."""
    out: list[Comparison] = []
    first: dict[str, Comparison] = {}
    repeats: dict[str, list[str]] = {}
    for c in comparisons:
        if c.runs is None:
            out.append(c)
        elif c.runs in first:
            kept = first[c.runs]
            kept.headline = kept.headline or c.headline
            repeats[c.runs].append(c.where)
        else:
            first[c.runs] = c
            repeats[c.runs] = []
            out.append(c)
    for key, wheres in repeats.items():
        if wheres:
            first[key].text += f" (counted once: the runs of {', '.join(wheres)} are identical to the last digit)"
    return out


def _num(v: float, signed: bool = False) -> str:
    """Three significant digits, whole numbers from 1000 up (no exponents in a verdict)."""
    spec = ".0f" if abs(v) >= 1000 else ".3g"
    return format(v, ("+" if signed else "") + spec)


def _unit(unit: str) -> str:
    return f" {unit}" if unit and unit != "%" else unit


def _judged(where: str, text: str, margin: float, noise: float, unit: str) -> Comparison:
    outcome = "held" if margin > noise else "failed" if margin < -noise else "indistinguishable"
    return Comparison(where, text, outcome, margin, noise, unit)


def missing(where: str, text: str, reason: str = "not measured") -> Comparison:
    return Comparison(where, text, "missing", reason=reason)


def _noise_or_missing(where: str, text: str, *parts: Measure | float | None) -> Comparison | float:
    """The largest noise of the measures among `parts` (a float is exact), or the missing
    comparison that says why there is none."""
    if any(p is None for p in parts):
        return missing(where, text)
    noises = [p.noise for p in parts if isinstance(p, Measure)]
    if any(x is None for x in noises):
        n = min(p.n for p in parts if isinstance(p, Measure))
        if n >= MIN_TRIALS:
            return missing(where, text, "no noise estimate: the trials' own values are not at hand (a "
                                        "committed table read back, its raw trials not archived)")
        return missing(where, text, f"no noise estimate: {n} valid trial{'s' if n != 1 else ''} "
                                    f"(needs {MIN_TRIALS})")
    return max([0.0, *(x for x in noises if x is not None)])


def _value(p: Measure | float) -> float:
    return p.value if isinstance(p, Measure) else float(p)


def above(where: str, text: str, a: Measure | None, b: Measure | float | None, unit: str = "") -> Comparison:
    """The claim needs a > b."""
    noise = _noise_or_missing(where, text, a, b)
    if isinstance(noise, Comparison):
        return noise
    return _judged(where, text, _value(a) - _value(b), noise, unit)     # type: ignore[arg-type]


def below(where: str, text: str, a: Measure | None, b: Measure | float | None, unit: str = "") -> Comparison:
    """The claim needs a < b."""
    noise = _noise_or_missing(where, text, a, b)
    if isinstance(noise, Comparison):
        return noise
    return _judged(where, text, _value(b) - _value(a), noise, unit)     # type: ignore[arg-type]


def inside(where: str, text: str, a: Measure | None, low: float, high: float, unit: str = "") -> Comparison:
    """The claim needs low <= a <= high; the margin is the distance to the nearer bound."""
    noise = _noise_or_missing(where, text, a)
    if isinstance(noise, Comparison):
        return noise
    v = _value(a)                                                          # type: ignore[arg-type]
    return _judged(where, text, min(v - low, high - v), noise, unit)


def near(where: str, text: str, a: Measure | None, paper: float, tol_pct: float, unit: str = "") -> Comparison:
    """The claim needs a within tol_pct % of the paper's value, either way (the tolerance is
    relative to the paper's number, never to ours)."""
    half = abs(paper) * tol_pct / 100.0
    return inside(where, text, a, paper - half, paper + half, unit)


def every_trial(where: str, text: str, flags: Sequence[bool]) -> Comparison:
    """A fact each trial shows or not (e.g. no packet dropped): held when every trial shows it,
    failed when none does; trials that disagree make it indistinguishable."""
    if len(flags) < MIN_TRIALS:
        return missing(where, text, f"no noise estimate: {len(flags)} valid trials (needs {MIN_TRIALS})")
    n = sum(bool(f) for f in flags)
    outcome = "held" if n == len(flags) else "failed" if n == 0 else "indistinguishable"
    return Comparison(where, f"{text} ({n} of {len(flags)} trials)", outcome)


# ---------------------------------------------------------------------------------------------
# The verdict
# ---------------------------------------------------------------------------------------------

@dataclass
class Verdict:
    claim: str
    text: str
    verdict: str
    held: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    indistinguishable: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    headline: list[str] = field(default_factory=list)
    closest: str = ""
    why: str = ""
    source: str = ""
    beyond: bool = False
    note: str = ""
    investigation: dict[str, Any] | None = None     # the config's: its verdict.md section, figure, fit
    bars: dict[str, Any] | None = None              # the config's: each bar's value, reason, history
    # each missing comparison's Comparison.gap, so two result sets' gaps compare
    # (analysis/robustness.py); not written to verdicts.json
    gaps: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return {o: len(getattr(self, o)) for o in OUTCOMES}

    def as_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in self.__dict__.items() if k != "gaps"}, "counts": self.counts}


def verdict_of(comparisons: Sequence[Comparison]) -> str:
    """The rule itself (module docstring)."""
    n = {o: sum(c.outcome == o for c in comparisons) for o in OUTCOMES}
    if any(c.headline and c.outcome in ("failed", "indistinguishable") for c in comparisons):
        return "not reproduced"
    if n["held"] + n["failed"] + n["indistinguishable"] == 0:
        return "not evaluated"
    if any(c.headline and c.outcome == "missing" for c in comparisons):
        return "not evaluated"
    if n["held"] <= n["failed"]:
        return "not reproduced"
    if n["held"] == len(comparisons):
        return "reproduced"
    return "partly"


def judge(claim: dict[str, Any], comparisons: Iterable[Comparison], note: str = "") -> Verdict:
    """The verdict of a claim (its config entry) from its comparisons. The config's `headline`
    names the conditions (a comparison's `where`) whose failure alone means not reproduced."""
    headline = list(claim.get("headline") or [])
    comps = list(comparisons)
    for c in comps:
        c.headline = c.where in headline
    comps = count_once(comps)
    verdict = verdict_of(comps)
    by = {o: [c.line() for c in comps if c.outcome == o] for o in OUTCOMES}
    judged = [c for c in comps if c.outcome != "missing" and c.margin is not None and c.noise is not None]
    closest = min(judged, key=Comparison.closeness).line() if judged else ""
    return Verdict(claim["id"], claim["text"], verdict, by["held"], by["failed"], by["indistinguishable"],
                   by["missing"], headline, closest, _why(verdict, comps, claim), claim.get("source", ""),
                   bool(claim.get("beyond")), note, claim.get("investigation"), claim.get("bars"),
                   sorted({c.gap() for c in comps if c.outcome == "missing"}))


def _why(verdict: str, comps: list[Comparison], claim: dict[str, Any]) -> str:
    """For a claim not reproduced: which comparisons stood against it, then the config's
    explanation of the evidence (a figure, a table row, a model limit)."""
    if verdict == "reproduced":
        return ""
    n = {o: [c for c in comps if c.outcome == o] for o in OUTCOMES}
    parts = []
    reasons = Counter(c.reason for c in n["missing"])
    missing_why = "; ".join(f"{k} ({v})" for k, v in reasons.most_common())
    judged = len(comps) - len(n["missing"])
    if verdict == "not evaluated" and not judged:
        parts.append(f"Nothing could be judged: {missing_why}." if comps else "No comparison was made.")
    else:
        heads = [c for c in n["failed"] if c.headline]
        if heads:
            parts.append("The headline comparison failed: " + "; ".join(c.line() for c in heads) + ".")
        unshown = [c for c in n["indistinguishable"] if c.headline]
        if unshown:
            parts.append("The headline comparison is within the trials' noise, so the claim's point is not "
                         "shown: " + "; ".join(c.line() for c in unshown) + ".")
        unmeasured = [c for c in n["missing"] if c.headline]
        if unmeasured:
            parts.append("The headline condition was not measured: " + "; ".join(c.line() for c in unmeasured) + ".")
        if n["failed"]:
            parts.append(f"{len(n['failed'])} of {len(comps)} comparisons failed"
                         + (f" (as many or more than the {len(n['held'])} that held)"
                            if len(n["held"]) <= len(n["failed"]) else "") + ".")
        if n["indistinguishable"]:
            parts.append(f"{len(n['indistinguishable'])} within the trials' noise.")
        if n["missing"]:
            parts.append(f"{len(n['missing'])} condition(s) the paper states could not be judged: {missing_why}.")
        if not n["held"]:
            parts.append("None held.")
    if claim.get("why"):
        parts.append(str(claim["why"]).strip())
    return " ".join(parts)


def scorecard(verdicts: Iterable[Any]) -> dict[str, int]:
    """How many claims got each verdict (Verdict objects or their dicts)."""
    out = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        out[v["verdict"] if isinstance(v, dict) else v.verdict] += 1
    return {k: n for k, n in out.items() if n}
