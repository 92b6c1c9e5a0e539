"""The verdict rule (analysis/verdicts.py) on hand-made measures: when a comparison holds, fails or
is within the trials' noise, and which verdict a set of comparisons gives."""
from __future__ import annotations

from typing import Any

import pytest

from analysis.verdicts import (
    MIN_TRIALS,
    Comparison,
    Measure,
    above,
    below,
    difference,
    every_trial,
    inside,
    judge,
    measure,
    missing,
    near,
    per_trial,
    runs_key,
    verdict_of,
)


def trials(*values: float) -> dict[str, Any]:
    """A cell.json metric over trials 1..n."""
    return {"trials": list(range(1, len(values) + 1)), "values": list(values)}


def cell(**metrics: tuple[float, ...]) -> dict[str, Any]:
    return {"n_valid": max(len(v) for v in metrics.values()), "metrics": {k: trials(*v) for k, v in metrics.items()}}


def c(outcome: str, where: str = "w") -> Comparison:
    return Comparison(where, "t", outcome)


def test_a_measure_is_the_trimmed_mean_with_the_trials_range_as_noise() -> None:
    m = measure(cell(x=(10, 11, 12, 13, 30)), "x")
    assert m is not None and m.value == pytest.approx(12.0) and m.noise == pytest.approx(20.0) and m.n == 5
    two = measure(cell(x=(10, 11)), "x")
    assert two is not None and two.noise is None and MIN_TRIALS == 3        # two trials: no noise estimate
    assert measure(cell(x=(1, 2, 3)), "y") is None and measure(None, "x") is None
    # a committed table read back: the statistic without its trials' values
    read_back = measure({"n_valid": 5, "metrics": {"x": {"mean": 4.0, "n": 5}}}, "x")
    assert read_back == Measure(4.0, None, 5)


def test_paired_trials_of_one_cell_and_differences_across_cells() -> None:
    c1 = cell(a=(100, 120, 110), b=(90, 130, 105))
    first = per_trial(c1, ["a", "b"], min)                  # per trial: 90, 120, 105
    assert first is not None and first.value == pytest.approx(105) and first.noise == pytest.approx(30)
    d = difference(Measure(10, 2, 5), Measure(4, 3, 4))
    assert d == Measure(6, 3, 4)
    assert difference(Measure(1, None, 1), Measure(1, 1, 5)).noise is None
    assert Measure(2, 0.5, 5).scaled(100) == Measure(200, 50, 5)


@pytest.mark.parametrize(("a", "b", "outcome"), [
    (Measure(450, 3, 5), Measure(440, 4, 5), "held"),                 # 10 apart, noise 4
    (Measure(440, 3, 5), Measure(450, 4, 5), "failed"),
    (Measure(443.4, 5.0, 5), Measure(447.7, 4.0, 5), "indistinguishable"),   # 4.3 ms inside 5 ms of noise
    (Measure(445, 0, 5), 440.0, "held"),                              # against a number: that cell's noise
])
def test_an_ordering_holds_or_fails_only_beyond_the_noise(a: Measure, b: Any, outcome: str) -> None:
    assert above("w", "t", a, b).outcome == outcome
    mirrored = {"held": "failed", "failed": "held"}.get(outcome, outcome)
    assert below("w", "t", a, b).outcome == mirrored


def test_a_comparison_without_a_noise_estimate_is_missing_and_says_why() -> None:
    one = above("w", "CUBIC vs H-TCP", Measure(460, None, 1), Measure(400, None, 1))
    assert one.outcome == "missing" and "1 valid trial (needs 3)" in one.line()
    assert above("w", "t", None, Measure(1, 0, 5)).line() == "w: t: not measured"
    read_back = above("w", "t", Measure(460, None, 5), Measure(400, None, 5))
    assert read_back.outcome == "missing" and "not at hand" in read_back.reason


def test_a_gap_names_where_and_why_not_the_values_around_it() -> None:
    """Two result sets lacking the same comparison have the same gaps though the measured side the
    line prints differs (analysis/robustness.py sets gaps side by side); gaps stay out of verdicts.json."""
    def gaps(linear: float) -> list[str]:
        text = f"MD-NF1 - vs linear {linear:g}"
        v = judge({"id": "x", "text": "t"}, [missing("rtt40, MD-NF1", text, "MD-NF1 not run here"),
                                             above("rtt40, MDvar", "t", Measure(2, 0.1, 5), 1.0)])
        assert v.missing == [f"rtt40, MD-NF1: {text}: MD-NF1 not run here"] and "gaps" not in v.as_dict()
        return v.gaps
    assert gaps(0.0749) == gaps(0.076) == ["rtt40, MD-NF1: MD-NF1 - vs linear #: MD-NF1 not run here"]


def test_tolerances_are_relative_to_the_papers_value_and_symmetric() -> None:
    # 426 against "about 370" within 15 %: relative to the paper's 370 the band ends at 425.5, so the
    # +15.07 % is outside (relative to the larger number it would have been inside)
    assert near("w", "t", Measure(425.8, 0.1, 5), 370, 15).outcome == "failed"
    assert near("w", "t", Measure(425.8, 1.81, 5), 370, 15).outcome == "indistinguishable"
    assert near("w", "t", Measure(314.8, 0.1, 5), 370, 15).outcome == "held"       # 0.3 inside the lower edge
    assert near("w", "t", Measure(314.2, 0.1, 5), 370, 15).outcome == "failed"     # 0.3 outside it: symmetric
    band = inside("w", "t", Measure(1.0, 0.1, 5), 0.75, 1.33)
    assert band.outcome == "held" and band.margin == pytest.approx(0.25)


def test_a_fact_of_every_trial() -> None:
    assert every_trial("w", "no drop", [True] * 5).outcome == "held"
    assert every_trial("w", "no drop", [False] * 5).outcome == "failed"
    assert every_trial("w", "no drop", [True, True, False, True, True]).outcome == "indistinguishable"
    assert every_trial("w", "no drop", [True]).outcome == "missing"


@pytest.mark.parametrize(("outcomes", "verdict"), [
    (["held", "held"], "reproduced"),
    (["held", "held", "missing"], "partly"),                 # a missing condition: at best partly
    (["held", "held", "indistinguishable"], "partly"),
    (["held", "held", "failed"], "partly"),
    (["held", "failed"], "not reproduced"),                  # no more held than failed
    (["held", "failed", "failed", "missing"], "not reproduced"),
    (["indistinguishable", "indistinguishable"], "not reproduced"),   # nothing stands out of the noise
    (["indistinguishable", "missing"], "not reproduced"),
    (["missing", "missing"], "not evaluated"),
    ([], "not evaluated"),
])
def test_the_four_verdicts(outcomes: list[str], verdict: str) -> None:
    assert verdict_of([c(o) for o in outcomes]) == verdict


@pytest.mark.parametrize(("head", "rest", "verdict"), [
    ("failed", ["held", "held", "held"], "not reproduced"),
    ("indistinguishable", ["held", "held", "held"], "not reproduced"),    # its point is not shown
    ("missing", ["held", "held", "held"], "not evaluated"),              # its point was not measured
    ("held", ["held", "indistinguishable"], "partly"),
    ("held", ["held", "held"], "reproduced"),
])
def test_a_headline_that_did_not_hold_decides_the_verdict(head: str, rest: list[str], verdict: str) -> None:
    comps = [c(head, "50 ms, 2 flows"), *(c(o, f"other {i}") for i, o in enumerate(rest))]
    comps[0].headline = True
    assert verdict_of(comps) == verdict


def test_a_headline_within_the_noise_is_named_in_the_why() -> None:
    comps = [above("20 ms", "fixed beta vs linear", Measure(5, 8, 5), 0.0), above("40 ms", "t", Measure(9, 1, 5), 0.0)]
    v = judge({"id": "x", "text": "t", "headline": ["20 ms"]}, comps)
    assert v.verdict == "not reproduced"
    assert "The headline comparison is within the trials' noise, so the claim's point is not shown: 20 ms" in v.why


def test_comparisons_of_identical_runs_count_once() -> None:
    same = cell(ratio=(1.5, 1.6, 1.55, 1.52, 1.58))
    twin = cell(ratio=(1.5, 1.6, 1.55, 1.52, 1.58))
    other = cell(ratio=(1.5, 1.6, 1.55, 1.52, 1.59))                   # one trial differs in the last digit
    comps = []
    for where, cl in (("M_t=6", same), ("M_t=7", twin), ("M_t=8", other)):
        comp = above(where, "downlink ahead", measure(cl, "ratio"), 1.0)
        comp.runs = runs_key("ratio above 1", cl)
        comps.append(comp)
    assert runs_key("ratio above 1", same) == runs_key("ratio above 1", twin)
    assert runs_key("ratio above 1", same) != runs_key("another comparison", same)
    assert runs_key("ratio above 1", {"n_valid": 0, "metrics": {}}) is None
    v = judge({"id": "x", "text": "t", "headline": ["M_t=7"]}, comps)
    assert v.counts["held"] == 2
    assert "(counted once: the runs of M_t=7 are identical to the last digit)" in v.held[0]
    assert v.held[0].endswith("(headline)")                 # the merged comparison carries its headline
    assert v.verdict == "reproduced"


def test_a_failed_headline_alone_makes_the_claim_not_reproduced() -> None:
    comps = [c("held", "50 ms, 1 flow"), c("held", "100 ms, 1 flow"), c("failed", "50 ms, 2 flows")]
    claim = {"id": "x", "text": "t", "headline": ["50 ms, 2 flows"]}
    v = judge(claim, comps)
    assert v.verdict == "not reproduced" and v.counts == {"held": 2, "failed": 1, "indistinguishable": 0,
                                                         "missing": 0}
    assert "The headline comparison failed: 50 ms, 2 flows" in v.why
    assert judge({**claim, "headline": []}, comps).verdict == "partly"


def test_the_verdict_names_its_closest_comparison_and_why() -> None:
    comps = [above("far", "a", Measure(10, 1, 5), 0.0), above("near", "b", Measure(3, 2, 5), 0.0),
             missing("gone", "c")]
    v = judge({"id": "x", "text": "t", "why": "Figure 9 shows it."}, comps)
    assert v.verdict == "partly" and v.closest.startswith("near: b [margin +3 against noise 2]")
    assert "1 condition(s) the paper states could not be judged: not measured (1)" in v.why
    assert v.why.endswith("Figure 9 shows it.")
    assert judge({"id": "x", "text": "t", "why": "no"}, [above("a", "b", Measure(3, 1, 5), 0.0)]).why == ""
    none = judge({"id": "x", "text": "t", "why": "Figure 9 shows it."}, [missing("a", "b")])
    assert none.verdict == "not evaluated"
    assert none.why == "Nothing could be judged: not measured (1). Figure 9 shows it."
    d = v.as_dict()
    assert d["counts"]["missing"] == 1 and d["indistinguishable"] == [] and d["beyond"] is False
