"""analysis/robustness_lane.py: the lane as an open choice. Each lane's cross-validation trials are
judged alone by the paper's own analysis; a claim is judged on the lanes only where it lacks no value
on either, a claim the lanes judge apart depends on the lane, and a snapshot without its trials'
values judges nothing."""
import json
import shutil
from pathlib import Path

from analysis import robustness, robustness_lane
from analysis.crossval import metrics as crossval
from analysis.report import robustness_table, status
from analysis.verdicts import measure

WESTWOOD_CLAIMS = ("equal_at_test1", "cubic_ahead_test2", "westwood_ahead_test3", "westwood_gain_needs_high_loss")


def snapshots(tmp_path: Path, paper: str) -> Path:
    """A copy of the committed snapshots of `paper`'s substrate comparison, to alter."""
    comp = robustness_lane.comparison(paper)
    for run in (comp["a"], comp["b"]):
        dest = robustness_lane.snapshot_path(run, paper, tmp_path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(robustness_lane.snapshot_path(run, paper), dest)
    return tmp_path


def edit(root: Path, run: str, paper: str, fn) -> None:
    path = robustness_lane.snapshot_path(run, paper, root)
    snap = json.loads(path.read_text())
    fn(snap["cells"])
    path.write_text(json.dumps(snap))


def test_a_snapshot_cell_keeps_its_trials_values_and_their_spread(tmp_path):
    snap = json.loads(robustness_lane.snapshot_path("tcg", "westwood").read_text())
    dest = robustness_lane.cells_of(snap, tmp_path / "cells")
    cell = json.loads((dest / "cubic-t3" / "cell.json").read_text())
    values = snap["cells"]["cubic-t3"]["goodput_kbit_s"]["values"]
    m = measure(cell, "goodput_kbit_s")
    assert m.n == len(values) and m.noise == max(values) - min(values)
    assert m.value == crossval.trimmed_stats(values)["mean"]
    assert not any(p.name.startswith("trial-") for p in (dest / "cubic-t3").iterdir())   # no trial folders


def test_a_cell_whose_metrics_cannot_be_paired_by_trial_is_refused(tmp_path):
    snap = json.loads(robustness_lane.snapshot_path("tcg", "westwood").read_text())
    snap["cells"]["cubic-t1"]["rexmt_data_pkts"]["values"].pop()
    try:
        robustness_lane.cells_of(snap, tmp_path / "cells")
    except ValueError as exc:
        assert "cubic-t1" in str(exc) and "snapshot" in str(exc)
    else:
        raise AssertionError("a cell with 5 goodput and 4 retransmission values was paired")


def test_only_claims_that_lack_no_value_on_either_lane_are_judged(tmp_path):
    root = snapshots(tmp_path, "westwood")
    reference = {c: "reproduced" for c in WESTWOOD_CLAIMS}
    lane = robustness_lane.judge("westwood", "full", reference, root)
    assert [r["run"] for r in lane["runs"]] == ["tcg", "uml-iperf3"]
    assert set(lane["verdicts"]) == {"equal_at_test1", "westwood_ahead_test3"}   # Test 1 and 3: both lanes
    # the loss sweep is not in the cross-validation: a verdict on the rest of its comparisons is no verdict
    assert "westwood_gain_needs_high_loss" not in lane["verdicts"]
    edit(root, "tcg", "westwood", lambda cells: cells.pop("westwood-t3"))
    assert set(robustness_lane.judge("westwood", "full", reference, root)["verdicts"]) == {"equal_at_test1"}
    reference["equal_at_test1"] = robustness.NOT_RUN                    # not evaluated in the reference
    assert robustness_lane.judge("westwood", "full", reference, root)["verdicts"] == {}


def test_a_claim_the_two_lanes_judge_apart_depends_on_the_lane_and_reaches_readme(tmp_path):
    root = snapshots(tmp_path, "westwood")

    def westwood_slower_at_test1(cells):                               # Test 1 no longer a tie
        cells["westwood-t1"]["goodput_kbit_s"]["values"] = [
            v * 0.7 for v in cells["westwood-t1"]["goodput_kbit_s"]["values"]]
    reference = {c: "reproduced" for c in WESTWOOD_CLAIMS}
    before = robustness_lane.judge("westwood", "full", reference, root)["verdicts"]["equal_at_test1"]
    edit(root, "tcg", "westwood", westwood_slower_at_test1)
    lane = robustness_lane.judge("westwood", "full", reference, root)
    got = lane["verdicts"]["equal_at_test1"]
    assert got["uml-iperf3"] == before["uml-iperf3"] and got["tcg"] != got["uml-iperf3"]
    doc = {"reference": reference, "alternatives": [], "lane": lane}
    assert robustness_lane.flips(doc, "equal_at_test1") and not robustness_lane.flips(doc, "westwood_ahead_test3")
    assert robustness.summary(doc, "equal_at_test1") == "depends on lane"
    cell = robustness_table.lane_cell(doc, "equal_at_test1")
    assert cell.startswith("**tcg: ") and f"uml-iperf3: {got['uml-iperf3']}" in cell
    assert robustness_table.lane_cell(doc, "westwood_ahead_test3").startswith("both: ")
    assert robustness_table.lane_cell(doc, "cubic_ahead_test2") == robustness_table.NOT_RUN
    assert "equal_at_test1 (tcg: " in status.lane_flips_line(doc, set(WESTWOOD_CLAIMS))


def test_a_claim_the_lane_does_not_reach_keeps_its_word_and_the_count_says_how_many_it_reached():
    doc = {"reference": {"a": "reproduced", "b": "partly"},
           "alternatives": [{"choice": "queue", "alternative": "q100", "favoured": True, "touched": 1,
                             "not_measured": [], "verdicts": {"a": "reproduced", "b": "partly"}}],
           "lane": {"comparison": "c", "runs": [], "verdicts": {"a": {"tcg": "reproduced", "uml": "reproduced"}}}}
    assert robustness.summary(doc, "a") == robustness.summary(doc, "b") == "robust"
    assert status.robust_cell(doc, ["a", "b"]) == "2 of 2 (the lane judged for 1)"
    assert status.lane_flips_line(doc, {"a", "b"}) == ""


def test_a_snapshot_without_its_trials_values_judges_no_claim():
    # Collateral Damage's TCG run kept its tables, not its trials: no noise estimate, no verdict
    snap = json.loads(robustness_lane.snapshot_path("tcg", "collateral").read_text())
    reference = {"goodput_same": "partly", "latency_rises_with_flows": "reproduced", "table2_median": "not reproduced"}
    lane = robustness_lane.judge("collateral", "full", reference)
    assert lane["verdicts"] == {} and not lane["runs"][0]["values_kept"] and lane["runs"][1]["values_kept"]
    assert all(not m["values"] for c in snap["cells"].values() for m in c.values())
    doc = {"reference": reference, "lane": lane,
           "alternatives": [{"choice": "queue", "alternative": "q100", "favoured": True, "touched": 1,
                             "not_measured": [], "verdicts": reference}]}
    assert any("kept its cells' statistics but not its trials' values" in line
               for line in robustness_table.lines(doc))


def test_a_lane_cell_short_of_its_five_trials_is_named(tmp_path):
    root = snapshots(tmp_path, "westwood")

    def one_trial_rejected(cells):
        for m in cells["cubic-t1"].values():
            m["values"].pop()
    edit(root, "uml-iperf3", "westwood", one_trial_rejected)
    lane = robustness_lane.judge("westwood", "full", {c: "reproduced" for c in WESTWOOD_CLAIMS}, root)
    assert lane["runs"][0]["short"] == {} and lane["runs"][1]["short"] == {"cubic-t1": 4}
    doc = {"reference": {c: "reproduced" for c in WESTWOOD_CLAIMS}, "lane": lane,
           "alternatives": [{"choice": "queue", "alternative": "q100", "favoured": True, "touched": 1,
                             "not_measured": [], "verdicts": {}}]}
    assert any("`uml-iperf3` has fewer than 5 valid trials in cubic-t1 (4)" in line
               for line in robustness_table.lines(doc))


def test_the_committed_robustness_files_lane_is_what_the_committed_snapshots_give():
    """The lane reads the snapshots alone: a committed robustness file whose lane block differs from
    them is stale (a new snapshot, or a change to the judging, without `make robustness`)."""
    for path in sorted(Path(robustness.CHECKOUT / "figures").glob("*/full-robustness.json")):
        doc = json.loads(path.read_text())
        paper = doc["paper"]
        lane = robustness_lane.judge(paper, "full", doc["reference"])
        assert doc.get("lane") == lane, f"{path}: its lane block is not what data/crossval/ gives; run make robustness"
