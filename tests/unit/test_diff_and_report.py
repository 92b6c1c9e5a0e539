"""`tcprepro diff` and figures/REPORT.md on hand-made result sets (figures/<paper>/<profile>/)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analysis import resultset, resultset_diff
from analysis.paper_tables import Column, Row, Table, to_csv, to_markdown
from analysis.report import report
from archive import trials as archive
from experiments import load_paper
from tcprepro import cli

REPO = Path(__file__).resolve().parents[2]
REFERENCE = {"tables": {"table1": {"columns": {
    "mean": {"metric": "goodput_kbyte_s", "stat": "mean", "tolerance": {"abs": 1.0, "smoke": {"abs": 2.5}}},
    "std": {"metric": "goodput_kbyte_s", "stat": "std"}}}}}


def make_set(root: Path, values: dict[str, tuple[float | None, float | None]],
             verdicts: dict[str, str], profile: str = "full", paper: str = "collateral") -> Path:
    """A result set: table1 (mean, std per cell, the paper's 111.8 / 0.01), verdicts, provenance."""
    d = root / paper / profile
    d.mkdir(parents=True)
    rows = []
    for cell, (mean, std) in values.items():
        r = Row(cell, {"cc": cell.split("-")[0]}, 5 if mean is not None else 0, 5)
        r.measured, r.paper = {"mean": mean, "std": std}, {"mean": 111.8, "std": 0.01}
        rows.append(r)
    t = Table("table1", "Table 1: goodput", [Column("mean", "goodput_kbyte_s", "mean", "KB/s"),
                                             Column("std", "goodput_kbyte_s", "std", "KB/s")], rows)
    (d / "table1.csv").write_text(to_csv(t))
    (d / "table1.md").write_text(to_markdown(t))
    (d / "verdicts.json").write_text(json.dumps([
        {"claim": c, "text": f"claim {c}", "verdict": v, "held": [f"{c} held 1"] if v != "not evaluated" else [],
         "failed": [], "missing": [], "note": ""} for c, v in verdicts.items()]))
    (d / "provenance.json").write_text(json.dumps({
        "paper": paper, "profile": profile, "trials_valid": 9, "trials_expected": 10, "trials_rerun": 2,
        "invalid_attempts_rerun": 3, "trials_never_valid": ["newreno-rtt50-f1/trial-4"],
        "kernels": {"6.1.0-56-amd64": 9}, "where": {"vm (tcg)": 9},
        "congestion_controls": {"htcp": ["module htcp sha256:0123456789abcdef"]},
        "fidelity_checks": {"base_rtt": {"pass": 9}, "forward.rate_worst_0.5s": {"pass": 8, "fail": 1}},
        "base_rtt_ms_after_calibration": [49.8, 50.3]}))
    (d / "fig3_owd_cdf.png").write_bytes(b"\x89PNG")
    return d


def test_result_set_reads_tables_verdicts_and_provenance(tmp_path: Path) -> None:
    d = make_set(tmp_path, {"cubic-rtt50-f1": (111.7, 0.2), "htcp-rtt50-f1": (None, None)}, {"a": "reproduced"})
    rs = resultset.load(d)
    assert (rs.paper, rs.profile, rs.tables) == ("collateral", "full", ["table1"])
    assert rs.measured[("table1", "cubic-rtt50-f1", "mean")] == pytest.approx(111.7)
    assert rs.measured[("table1", "htcp-rtt50-f1", "mean")] is None
    assert rs.paper_values[("table1", "htcp-rtt50-f1", "mean")] == pytest.approx(111.8)
    assert rs.scorecard() == {"reproduced": 1}
    with pytest.raises(resultset.ResultSetError, match=r"no verdicts\.json"):
        resultset.load(tmp_path)


def test_numbers_beyond_their_tolerance_and_changed_verdicts(tmp_path: Path) -> None:
    fresh = resultset.load(make_set(tmp_path / "a", {"cubic-rtt50-f1": (111.2, 0.3), "htcp-rtt50-f1": (113.0, 0.1)},
                                    {"goodput_same": "reproduced", "cubic_most_latency": "partly"}))
    ref = resultset.load(make_set(tmp_path / "b", {"cubic-rtt50-f1": (111.9, 0.3), "htcp-rtt50-f1": (111.5, None)},
                                  {"goodput_same": "reproduced", "cubic_most_latency": "reproduced"}))
    d = resultset_diff.diff(fresh, ref, resultset_diff.tolerances(REFERENCE, "full"), "fresh", "ref")
    # cubic's mean moved 0.7 (within ±1); htcp's 1.5 (beyond); std has no tolerance: exact
    assert [(m.key[1], m.key[2]) for m in d.moved] == [("htcp-rtt50-f1", "mean")]
    assert [(m.key[1], m.key[2]) for m in d.one_sided] == [("htcp-rtt50-f1", "std")]
    assert d.compared == 3
    assert [(v.claim, v.a, v.b) for v in d.verdicts] == [("cubic_most_latency", "partly", "reproduced")]
    assert d.exit_code() == 1
    text = d.render()
    assert "table1 htcp-rtt50-f1 mean: fresh 113, ref 111.5 (moved +1.5; tolerance ±1)" in text
    assert "cubic_most_latency: fresh partly, ref reproduced" in text
    # the smoke profile's tolerance is wider: nothing moved there
    smoke = resultset_diff.diff(fresh, ref, resultset_diff.tolerances(REFERENCE, "smoke"))
    assert not smoke.moved


def test_same_verdicts_exit_zero_unless_strict(tmp_path: Path) -> None:
    a = resultset.load(make_set(tmp_path / "a", {"cubic-rtt50-f1": (111.2, 0.3)}, {"x": "reproduced"}))
    b = resultset.load(make_set(tmp_path / "b", {"cubic-rtt50-f1": (115.0, 0.3)}, {"x": "reproduced"}))
    d = resultset_diff.diff(a, b, resultset_diff.tolerances(REFERENCE, "full"))
    assert len(d.moved) == 1 and d.exit_code() == 0 and d.exit_code(strict=True) == 1


def test_against_the_papers_numbers(tmp_path: Path) -> None:
    rs = resultset.load(make_set(tmp_path, {"cubic-rtt50-f1": (111.7, 0.01), "htcp-rtt50-f1": (None, None)},
                                 {"goodput_same": "reproduced", "more_retransmissions": "not reproduced"}))
    d = resultset_diff.diff(rs, resultset.paper_side(rs), resultset_diff.tolerances(REFERENCE, "full"), "run", "paper")
    assert not d.moved                                          # 111.7 vs 111.8 is inside ±1
    assert {m.key[1] for m in d.one_sided} == {"htcp-rtt50-f1"}  # the cell this run did not measure
    assert [(v.claim, v.a, v.b) for v in d.verdicts] == [("more_retransmissions", "not reproduced", "reproduced")]


def test_a_diff_compares_one_paper(tmp_path: Path) -> None:
    a = resultset.load(make_set(tmp_path / "a", {"x-1": (1.0, 1.0)}, {}))
    b = resultset.load(make_set(tmp_path / "b", {"x-1": (1.0, 1.0)}, {}, paper="westwood"))
    with pytest.raises(ValueError, match="one paper"):
        resultset_diff.diff(a, b, {})


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tcprepro", "diff", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60)


def test_diff_command_exit_codes(tmp_path: Path) -> None:
    a = make_set(tmp_path / "a", {"cubic-rtt50-f1": (111.7, 0.01)}, {"goodput_same": "reproduced"})
    b = make_set(tmp_path / "b", {"cubic-rtt50-f1": (111.6, 0.01)}, {"goodput_same": "reproduced"})
    same = run_cli(str(a), str(b))
    assert same.returncode == 0, same.stderr
    assert "1 moved beyond their tolerance" not in same.stdout and "0 claim verdicts changed" in same.stdout
    assert run_cli(str(a), "paper").returncode == 0           # 111.7 vs 111.8 (±1), reproduced as stated
    bad = run_cli(str(tmp_path), "paper")
    assert bad.returncode == 2 and "no verdicts.json" in bad.stderr


def test_diff_json_says_what_the_text_says_with_its_exit_status(capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """On the committed reference: against the paper (verdicts changed: 1), against itself (0)."""
    monkeypatch.chdir(REPO)
    ref = "figures/collateral/full"

    def diff(*args: str) -> tuple[int, str, str]:
        status = cli.main(["diff", *args])
        out = capsys.readouterr()
        return status, out.out, out.err

    (status, text, _), (js_status, js, _) = diff(ref, "paper"), diff(ref, "paper", "--json")
    assert status == js_status == 1
    got = json.loads(js)
    assert (got["a"], got["b"]) == (ref, "paper") and got["verdicts_changed"]
    assert text.startswith(
        f"{ref} against paper: {got['compared']} numbers compared, {len(got['moved'])} moved beyond their "
        f"tolerance, {len(got['one_sided'])} measured on one side only, {len(got['verdicts_changed'])} claim "
        "verdicts changed\n")
    assert all(f"  {v['claim']}: {ref} {v['a']}, paper {v['b']}\n" in text for v in got["verdicts_changed"])
    moved = got["moved"][0]
    assert set(moved) == {"table", "cell", "column", "a", "b", "tolerance"}
    assert set(moved["tolerance"]) == {"abs", "rel"}
    status, js, _ = diff(ref, ref, "--strict", "--json")
    same = json.loads(js)
    assert status == 0 and same["compared"] == got["compared"]
    assert not any(same[k] for k in ("moved", "one_sided", "verdicts_changed", "stale"))
    status, js, err = diff("figures", "paper", "--json")
    assert status == 2 and js == "" and "no verdicts.json" in err


@pytest.mark.parametrize(("text", "says"), [
    ("not json", "not readable JSON"), ("{}", "not a JSON list"), ("[1, 2]", "entry 0: not an object"),
    ('[{"verdict": "reproduced"}]', "entry 0: no claim id"),
    ('[{"claim": "goodput_same"}]', "entry 0: verdict None is none of"),
    ('[{"claim": "goodput_same", "verdict": "reproduced", "held": [1]}]', "entry 0: 'held' is not a list of text"),
])
def test_a_malformed_verdicts_file_is_an_error_not_a_changed_verdict(tmp_path: Path, text: str, says: str) -> None:
    a = make_set(tmp_path / "a", {"cubic-rtt50-f1": (111.7, 0.01)}, {"goodput_same": "reproduced"})
    b = make_set(tmp_path / "b", {"cubic-rtt50-f1": (111.7, 0.01)}, {"goodput_same": "reproduced"})
    (b / "verdicts.json").write_text(text)
    out = run_cli(str(a), str(b))
    assert out.returncode == 2 and says in out.stderr and "Traceback" not in out.stderr     # 1 means: changed
    assert out.stderr.count("\n") == 1


def test_report_scorecards_claims_tables_figures_provenance(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(archive, "DATA", tmp_path / "data")       # a checkout with no archived trials
    make_set(tmp_path, {"cubic-rtt50-f1": (111.7, 0.01)},
             {"goodput_same": "reproduced", "cubic_most_latency": "partly", "more_retransmissions": "not evaluated"})
    sets: dict[str, Any] = {"collateral": resultset.load(tmp_path / "collateral" / "full"), "westwood": None}
    verdicts = json.loads((tmp_path / "collateral" / "full" / "verdicts.json").read_text())
    verdicts[1] |= {"failed": ["50 ms: a", "100 ms: b"], "indistinguishable": ["5 flows: c"],
                    "closest": "5 flows: c [margin +2 against noise 3]", "why": "1 of 4 failed. Figure 3."}
    sets["collateral"].verdicts = {v["claim"]: v for v in verdicts}
    text = report.render("full", tmp_path, sets)
    assert "**Overall, the papers' claims: 3 claims: 1 reproduced, 1 partly, 1 not evaluated.**" in text
    # the result sets by name, not a placeholder (issue 53: `figures/<paper>/` showed as figures//full/)
    assert "Generated by `python -m analysis.report.report --profile full` from `figures/collateral/full/` (" in text
    assert "| westwood | no results for this profile |" in text
    assert "| goodput_same | **reproduced** | 1 | 0 | 0 | 0 | - |" in text
    assert "| cubic_most_latency | **partly** | 1 | 2 | 1 | 0 | 5 flows: c [margin +2 against noise 3] |" in text
    assert "- **cubic_most_latency** (partly): 1 of 4 failed. Figure 3." in text
    assert "- **goodput_same**" not in text                       # reproduced: no why
    assert "| cubic | 5/5 | 111.7 | 111.8 | -0.1 |" in text
    assert "![fig3_owd_cdf](collateral/full/fig3_owd_cdf.png)" in text
    assert "2 needed a rerun (3 invalid attempts); never valid: newreno-rtt50-f1/trial-4" in text
    assert "htcp: module htcp sha256:0123456789abcdef" in text
    assert "failing in some: forward.rate_worst_0.5s ({'pass': 8, 'fail': 1})" in text
    # the hand-made set records no trial specs, and its data/full/collateral holds no trials
    assert "whether it is stale against the current config cannot be told" not in text
    assert "**No raw trials archived** (data/full/collateral/ holds none)" in text
    assert report.report_path(tmp_path, "full").name == "REPORT.md"
    assert report.report_path(tmp_path, "quick").name == "REPORT-quick.md"


def test_claims_beyond_the_paper_are_counted_apart(tmp_path: Path) -> None:
    """config/wlan.yaml marks adaptive_tracks_flow_ratio `beyond: true`: it must not pad the paper's count."""
    assert "adaptive_tracks_flow_ratio" in report.beyond_claims("wlan")
    make_set(tmp_path, {"cubic-rtt50-f1": (111.7, 0.01)},
             {"dl1ul1_mt1_numbers": "reproduced", "adaptive_tracks_flow_ratio": "partly"}, paper="wlan")
    text = report.render("full", tmp_path, {"wlan": resultset.load(tmp_path / "wlan" / "full")})
    assert "**Overall, the papers' claims: 1 claim: 1 reproduced.**" in text
    assert "| wlan | 1 claim: 1 reproduced (beyond the paper: 1 claim: 1 partly) |" in text
    assert "### Beyond the paper" in text


def test_stale_result_sets_are_flagged_in_the_report_and_the_diff(tmp_path: Path) -> None:
    """A result set records per cell what its trials ran; when the config now gives that cell
    another spec, the report and `tcprepro diff` say so."""
    from analysis import staleness
    from analysis.report import against_reference as reference

    cfg = load_paper("collateral")
    spec = cfg.trial_spec("cubic-rtt50-f1", 1, "full")
    old = json.loads(json.dumps(spec))
    old["duration_s"] = 60
    d = make_set(tmp_path, {"cubic-rtt50-f1": (111.7, 0.01)}, {"goodput_same": "reproduced"})
    prov = json.loads((d / "provenance.json").read_text())
    prov["config"] = {"config_sha256": "0" * 64, "trials_from_other_config_versions": 5,
                      "stale_trials": {"cubic-rtt50-f1/trial-1": staleness.describe(staleness.differences(old, spec))},
                      "cell_specs": {"cubic-rtt50-f1": [staleness.digest(old)]}}
    (d / "provenance.json").write_text(json.dumps(prov))
    text = report.render("full", tmp_path, {"collateral": resultset.load(d)})
    assert ("**Stale: 1 cell(s) ran another spec than config/collateral.yaml gives now: cubic-rtt50-f1; fields, "
            "when the result set was made: cubic-rtt50-f1/trial-1: duration_s: 60 -> 180.**") in text
    out = reference.compare(d, "paper").render()
    assert "stale results" in out and f"{d}: Stale: 1 cell(s)" in out
    prov["config"]["cell_specs"] = {"cubic-rtt50-f1": [staleness.digest(spec)]}
    (d / "provenance.json").write_text(json.dumps(prov))
    assert "Stale" not in report.render("full", tmp_path, {"collateral": resultset.load(d)})
    assert "stale results" not in reference.compare(d, "paper").render()


def test_a_run_is_checked_against_the_committed_reference_of_its_profile(tmp_path: Path, capsys) -> None:
    from analysis.report import against_reference as reference

    run, refs = tmp_path / "run", tmp_path / "refs"
    make_set(run, {"cubic-rtt50-f1": (110.0, 0.0)}, {"goodput_same": "reproduced"}, profile="smoke")
    made = make_set(tmp_path / "made", {"cubic-rtt50-f1": (111.0, 0.0)}, {"goodput_same": "reproduced"},
                    profile="smoke")
    (refs / "collateral").mkdir(parents=True)
    ref = made.rename(refs / "collateral" / "smoke-reference")
    args = ["--profile", "smoke", "--figures", str(run), "--references", str(refs), "--check"]
    assert reference.main(args) == 0               # 1 KB/s is within smoke's ±2.5
    assert "against the committed reference" in capsys.readouterr().out
    verdicts = json.loads((ref / "verdicts.json").read_text())
    verdicts[0]["verdict"] = "not reproduced"
    (ref / "verdicts.json").write_text(json.dumps(verdicts))
    assert reference.main(args) == 1               # a changed verdict fails the check ...
    assert reference.main(args[:-1]) == 0          # ... only when asked to
    assert "goodput_same: " in capsys.readouterr().out
    make_set(run, {"cubic-rtt50-f1": (110.0, 0.0)}, {"goodput_same": "reproduced"}, profile="quick")
    assert reference.main(["--profile", "quick", "--figures", str(run), "--references", str(refs)]) == 0
    assert "no committed quick reference" in capsys.readouterr().out


def test_a_run_without_the_references_numbers_fails_the_check(tmp_path: Path, capsys) -> None:
    """A run whose trials were all invalid has no numbers; its verdicts ("not evaluated") may even
    match a one-cell reference's, yet the check must fail and say why."""
    from analysis.report import against_reference as reference

    run, refs = tmp_path / "run", tmp_path / "refs"
    make_set(run, {"cubic-rtt50-f1": (None, None)}, {"goodput_same": "not evaluated"}, profile="smoke")
    made = make_set(tmp_path / "made", {"cubic-rtt50-f1": (111.0, 0.0)}, {"goodput_same": "not evaluated"},
                    profile="smoke")
    (refs / "collateral").mkdir(parents=True)
    made.rename(refs / "collateral" / "smoke-reference")
    args = ["--profile", "smoke", "--figures", str(run), "--references", str(refs)]
    assert reference.main(args) == 0                # reported, but only --check fails on it
    assert "this run lacks 2 numbers the reference has" in capsys.readouterr().out
    assert reference.main([*args, "--check"]) == 1
    d = reference.compare(run / "collateral" / "smoke", refs / "collateral" / "smoke-reference")
    assert [m.key[2] for m in d.missing_in_a] == ["mean", "std"] and d.exit_code() == 0


def test_a_relative_tolerance_is_a_fraction_of_the_reference_side() -> None:
    """Against the paper's 370 with 15 %: 425.5 is the edge, 426 is beyond it (a tolerance taken of
    the larger number, 426, would have let it through)."""
    t = resultset_diff.Tolerance(rel=0.15)
    assert t.allows(425.5, 370) and not t.allows(426, 370)
    assert t.allows(314.5, 370) and not t.allows(314.4, 370)
    assert str(t) == "±15 %"


def test_a_figure_printed_as_text_is_a_table_in_figure_order(tmp_path: Path) -> None:
    """Westwood+'s Fig 1 is a tcpprobe listing: fig01_tcpprobe.md goes into the report as a table
    where its figure would stand, not as an image."""
    d = make_set(tmp_path, {"cubic-rtt50-f1": (111.7, 0.01)}, {"goodput_same": "reproduced"})
    (d / "fig01_listing.md").write_text("Fig. 1: a listing\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    text = report.render("full", tmp_path, {"collateral": resultset.load(d)})
    assert "| 1 | 2 |" in text and "fig01_listing.md" not in text
    assert text.index("Fig. 1: a listing") < text.index("![fig3_owd_cdf]")
