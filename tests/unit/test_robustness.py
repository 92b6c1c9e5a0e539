"""analysis/robustness.py and its table: the overlay puts each alternative's cells in the place of the
ones it touches and nothing else; a claim is robust only when judged the same under every
alternative, a flip names its choice, a claim not judged under an alternative is not run, never
robust; flips under an alternative the text favours reach README's status."""
import dataclasses
import json
from pathlib import Path

import pytest

from analysis import aggregate, robustness
from analysis.report import robustness_table, status
from experiments import load_paper
from sim import equivalence


def measured(results: Path, *cells: str) -> None:
    for c in cells:
        (results / c).mkdir(parents=True)
        (results / c / "cell.json").write_text("{}")


def test_the_overlay_replaces_exactly_the_touched_cells_that_are_measured(tmp_path):
    cfg = load_paper("collateral")
    alt = next(a for a in cfg.alternatives if a.key == "queue_accounting.dummynet")
    results = tmp_path / "results"
    twin_100 = alt.twins["cubic-rtt100-f1"]
    measured(results, "cubic-rtt50-f1", "cubic-dnqueue-rtt50-f1", "cubic-rtt100-f1", "cubic-rtt100-f2",
             twin_100, "htcp-adaptive-rtt50-f1")
    touched, missing = robustness.overlay(cfg, results, alt, tmp_path / "alt")
    links = {p.name: p.resolve().name for p in (tmp_path / "alt").iterdir()}
    # the investigation's cell stands in for the 50-ms cell and is not also itself: a claim reading
    # it would set the reading beside itself
    assert links == {"cubic-rtt50-f1": "cubic-dnqueue-rtt50-f1",
                     "cubic-rtt100-f1": twin_100,
                     "htcp-adaptive-rtt50-f1": "htcp-adaptive-rtt50-f1"}   # not touched: the reference's
    assert sorted(touched) == ["cubic-rtt100-f1", "cubic-rtt100-f2", "cubic-rtt50-f1"]
    assert missing == ["cubic-rtt100-f2"]                                  # its twin is not measured: left out
    touched, missing = robustness.overlay(cfg, results, None, tmp_path / "ref")
    assert touched == missing == [] and {p.name for p in (tmp_path / "ref").iterdir()} == {
        p.name for p in results.iterdir() if p.name in cfg.cells_by_id}


def doc(**alts):
    """A robustness file: the reference and each alternative's verdicts (a, b, c are claims)."""
    return {"reference": {"a": "reproduced", "b": "not reproduced", "c": "partly"},
            "alternatives": [{"choice": k.split("_")[0], "alternative": k.split("_")[1], "favoured": fav,
                              "touched": 3, "not_measured": [], "verdicts": v} for k, (fav, v) in alts.items()]}


def test_a_claim_is_robust_only_when_judged_alike_under_every_alternative():
    d = doc(queue_q100=(True, {"a": "reproduced", "b": "partly", "c": "not evaluated"}),
            length_s300=(False, {"a": "reproduced", "b": "not reproduced", "c": "partly"}))
    assert robustness.summary(d, "a") == "robust"
    assert robustness.summary(d, "b") == "depends on queue"
    assert robustness.summary(d, "c") == "not yet run under 1 of 2"
    assert robustness_table.favoured_flips(d) == {"b": ["queue.q100"]}
    table = robustness_table.lines(d)
    assert "| b | not reproduced | **partly** | = | depends on queue |" in table
    assert "| c | partly | not run | = | not yet run under 1 of 2 |" in table
    assert any("`queue.q100`*" in line for line in table)             # the text favours it: marked
    assert status.robust_cell(d, ["a", "b", "c"]) == "1 of 3 (1 not yet run under all)"
    assert "b (under queue.q100)" in status.favoured_flips_line(d, {"a", "b", "c"})


def test_the_projects_own_checks_are_marked_and_counted_apart_from_the_papers_claims():
    d = doc(queue_q100=(True, {"a": "reproduced", "b": "not reproduced", "c": "partly"}))
    d["beyond"] = ["c"]
    table = robustness_table.lines(d)
    assert "| c (beyond) | partly | = | robust |" in table and "| a | reproduced | = | robust |" in table
    assert any("The paper's claims robust to every alternative: 2 of 2; this project's own checks beyond "
               "the paper: 1 of 1." in line for line in table)


def test_a_flip_under_an_alternative_the_text_disfavours_stays_in_verdict_md():
    d = doc(tcp_bic=(False, {"a": "partly", "b": "not reproduced", "c": "partly"}))
    assert robustness.summary(d, "a") == "depends on tcp"
    assert robustness_table.favoured_flips(d) == {} and status.favoured_flips_line(d, {"a"}) == ""


def test_a_claim_not_evaluated_in_the_reference_is_not_called_robust():
    d = doc(queue_q100=(True, {"a": "not evaluated", "b": "not evaluated", "c": "not evaluated"}))
    d["reference"]["a"] = "not evaluated"
    assert robustness.summary(d, "a") == "not evaluated"
    assert status.robust_cell(None, ["a"]) == "no runs"


def test_a_claim_judged_on_fewer_comparisons_than_the_reference_is_not_run_not_flipped():
    """A touched cell not measured yet leaves a claim short of data: its verdict there is set aside."""
    reference = {"a": ("reproduced", set()), "b": ("partly", {"x at 100 ms"})}
    under = {"a": ("partly", {"at 100 ms"}), "b": ("not reproduced", {"x at 100 ms"})}
    verdicts, incomplete = robustness.comparable(reference, under)
    assert verdicts == {"a": "not evaluated", "b": "not reproduced"} and incomplete == ["a"]


def test_a_claim_that_reads_both_readings_is_not_applicable_under_that_alternative():
    """Under an alternative an investigation's cell stands in for, a claim that read that cell beside
    the reference's compares the two readings itself: neither a flip nor a run still owed."""
    reference = {"a": ("reproduced", set()), "inv": ("reproduced", set())}
    under = {"a": ("reproduced", set()), "inv": ("not reproduced", {"dnqueue at 50 ms"})}
    verdicts, incomplete = robustness.comparable(reference, under, across={"inv"})
    assert verdicts == {"a": "reproduced", "inv": robustness.ACROSS} and incomplete == []
    d = {"reference": {"a": "reproduced", "inv": "reproduced"},
         "alternatives": [{"choice": "queue", "alternative": "q100", "favoured": True, "touched": 2,
                           "not_measured": [], "verdicts": verdicts}]}
    assert robustness.summary(d, "inv") == robustness.ACROSS and robustness.flips(d, "inv") == []
    assert "| inv | reproduced | n/a | compares both readings |" in robustness_table.lines(d)
    d["alternatives"].append({"choice": "tcp", "alternative": "bic", "favoured": False, "touched": 2,
                              "not_measured": [], "verdicts": {"a": "reproduced", "inv": "reproduced"}})
    assert robustness.summary(d, "inv") == "robust"      # the same wherever it does not compare the readings


def test_the_cells_an_investigation_lends_are_found_from_the_config():
    cfg = load_paper("ledbat")
    alt = next(a for a in cfg.alternatives if a.key == "delayed_acks.md_nf2_off")
    assert robustness.standing_in(cfg, alt) == {"ledbat-md-nf2-rtt40-n2-100mb-quickack",
                                                "ledbat-md-nf2-rtt20-n2-100mb-quickack"}


def test_a_flip_read_from_cells_of_another_build_is_marked_as_such():
    d = doc(queue_q100=(True, {"a": "partly", "b": "partly", "c": "partly"}))
    alt = d["alternatives"][0]
    alt["builds"] = {"measured": ["6.1.192-um-new"], "reference": ["6.1.192-um-old"]}
    alt["other_build"] = {"cells": ["x"], "claims": ["a"]}
    table = robustness_table.lines(d)
    assert "| a | reproduced | **partly**† | depends on queue |" in table
    assert "| b | not reproduced | **partly** | depends on queue |" in table    # reads no such cell
    assert any("`queue.q100`: 1 cells on 6.1.192-um-new against 6.1.192-um-old" in line for line in table)
    line = status.favoured_flips_line(d, {"a", "b"})
    assert "a (under queue.q100†)" in line and "b (under queue.q100)" in line and "another kernel" in line


def provenance(results: Path, cell: str, release: str) -> None:
    for k in (1, 2):
        (results / cell / f"trial-{k}").mkdir(parents=True)
        (results / cell / f"trial-{k}" / "provenance.json").write_text(
            json.dumps({"kernel": {"release": release}}))


def test_the_touched_cells_whose_stand_in_ran_on_another_kernel_are_found(tmp_path):
    cfg = load_paper("collateral")
    alt = next(a for a in cfg.alternatives if a.key == "queue_accounting.dummynet")
    provenance(tmp_path, "cubic-rtt100-f1", "old")
    provenance(tmp_path, alt.twins["cubic-rtt100-f1"], "new")
    provenance(tmp_path, "cubic-rtt100-f2", "new")
    provenance(tmp_path, alt.twins["cubic-rtt100-f2"], "new")
    (tmp_path / alt.twins["cubic-rtt100-f2"] / "trial-3.partial").mkdir()
    (tmp_path / alt.twins["cubic-rtt100-f2"] / "trial-3.partial" / "provenance.json").write_text(
        json.dumps({"kernel": {"release": "other"}}))                                  # unfinished: not counted
    assert robustness.builds(tmp_path, ["cubic-rtt100-f1", "cubic-rtt100-f2"]) == ["new", "old"]
    assert robustness.on_other_build(tmp_path, alt, ["cubic-rtt100-f1", "cubic-rtt100-f2"]) == ["cubic-rtt100-f1"]


def simulated(results: Path, cell: str, sources: str) -> None:
    (results / cell / "trial-1").mkdir(parents=True)
    (results / cell / "trial-1" / "provenance.json").write_text(json.dumps({"simulator": {
        "version": "ns-3 3.37", "model": "sim/wlan/wlan_dcf.cc", "sources_sha256": sources}}))


def test_simulated_cells_of_sources_a_recorded_check_showed_equal_are_one_build(tmp_path):
    """Model sources joined by equivalent_sources.yaml gave the same output on rerun: a stand-in of
    the newer sources does not mark the flip as maybe the build's; one of unrecorded sources does."""
    cfg = load_paper("wlan")
    alt = next(a for a in cfg.alternatives if a.key == "scheduler_queues.shared")
    first = equivalence.records("wlan_dcf")[0]
    older, newer = first["ran"], equivalence.newest_equal("wlan_dcf", first["ran"])
    assert newer != older and equivalence.same_sources("wlan_dcf", older, newer)
    a, b = sorted(c for c in alt.twins if c in {x.cell_id for x in cfg.cells("full")})[:2]
    simulated(tmp_path, a, older)
    simulated(tmp_path, alt.twins[a], newer)
    simulated(tmp_path, b, older)
    simulated(tmp_path, alt.twins[b], "0" * 64)                         # sources no check joined
    assert robustness.builds(tmp_path, [a]) == robustness.builds(tmp_path, [alt.twins[a]]) == [
        f"ns-3 3.37 model {newer[:12]}"]
    assert robustness.on_other_build(tmp_path, alt, [a, b]) == [b]


def test_a_verdict_read_from_a_stand_in_short_of_trials_is_marked_as_such(tmp_path):
    cfg = load_paper("collateral")
    alt = next(a for a in cfg.alternatives if a.key == "queue_accounting.dummynet")
    for cell, n in (("cubic-rtt100-f1", 5), ("cubic-rtt100-f2", 5)):
        (tmp_path / alt.twins[cell]).mkdir(parents=True)
        (tmp_path / alt.twins[cell] / "cell.json").write_text(
            json.dumps({"n_valid": n - (cell == "cubic-rtt100-f1") * 2, "expected_trials": 5,
                        "complete": cell != "cubic-rtt100-f1"}))
    assert robustness.short_of_trials(tmp_path, alt, ["cubic-rtt100-f1", "cubic-rtt100-f2"]) == {
        "cubic-rtt100-f1": f"{alt.twins['cubic-rtt100-f1']} (3/5)"}
    d = doc(queue_q100=(True, {"a": "reproduced", "b": "partly", "c": "not evaluated"}))
    d["alternatives"][0]["short"] = {"cells": ["x-twin (3/5)"], "claims": ["a", "b", "c"]}
    table = robustness_table.lines(d)
    assert "| a | reproduced | =‡ | robust |" in table                 # the same verdict, on fewer trials
    assert "| b | not reproduced | **partly**‡ | depends on queue |" in table
    assert "| c | partly | not run | not yet run under 1 of 1 |" in table  # nothing read: nothing marked
    assert any("`queue.q100`: x-twin (3/5)" in line for line in table)


def test_a_verdict_read_from_compact_cells_other_code_packed_is_marked_as_such():
    d = doc(queue_q100=(True, {"a": "reproduced", "b": "partly", "c": "not evaluated"}))
    d["alternatives"][0]["packed_elsewhere"] = {"cells": ["x-twin (2 trials)"], "claims": ["a", "b", "c"]}
    table = robustness_table.lines(d)
    assert "| a | reproduced | =§ | robust |" in table                 # the same verdict, from old code's values
    assert "| b | not reproduced | **partly**§ | depends on queue |" in table
    assert "| c | partly | not run | not yet run under 1 of 1 |" in table  # nothing read: nothing marked
    assert any("`queue.q100`: x-twin (2 trials)" in line for line in table)
    assert robustness_table.favoured_flips(d) == {"b": ["queue.q100§"]}
    assert "§: read from compact cells" in status.favoured_flips_line(d, {"a", "b"})


def test_a_claim_the_second_sample_alone_moves_rests_on_the_sample():
    """A second sample of the reference (other seeds) that gives a claim another verdict: the claim
    is not robust, its flips under an alternative are said to be no evidence of the choice, and a
    claim whose cells it did not re-measure is not run there, never confirmed."""
    d = doc(queue_q100=(True, {"a": "partly", "b": "partly", "c": "partly"}),
            length_s300=(False, {"a": "reproduced", "b": "not reproduced", "c": "partly"}))
    d["second_sample"] = {"cells": 2, "of": 3, "trials": [6, 7, 8, 9, 10],
                          "builds": {"measured": ["um-new"], "reference": ["um-old"]},
                          "verdicts": {"a": "partly", "b": "not reproduced", "c": "not evaluated"}}
    assert robustness.rests_on_sample(d, "a") and not robustness.rests_on_sample(d, "b")
    assert not robustness.rests_on_sample(d, "c")                                   # not re-sampled
    assert robustness.summary(d, "a") == "rests on the sample (flips under queue too)"
    assert robustness.summary(d, "b") == "depends on queue"
    assert robustness.summary(d, "c") == "robust"
    table = robustness_table.lines(d)
    assert "| claim | reference | second sample | `queue.q100`* | `length.s300` | summary |" in table
    assert "| a | reproduced | **partly** | **partly** | = | rests on the sample (flips under queue too) |" in table
    assert "| c | partly | not run | = | = | robust |" in table
    assert any(line.startswith("Second sample: 2 of the reference's 3 cells") and "trials 6-10" in line
               and "It moves 1: a." in line for line in table)
    assert status.robust_cell(d, ["a", "b", "c"]) == "1 of 3 (1 rests on the sample)"
    line = status.favoured_flips_line(d, {"a", "b"})
    assert "a (under queue.q100; a second sample of the reference alone flips it too)" in line
    assert "b (under queue.q100)" in line


def test_the_second_sample_sits_beside_the_results_it_resamples():
    assert robustness.second_sample_dir(Path("/r/results/full/collateral")) == Path(
        "/r/results/second-sample/full/collateral")


def test_a_stand_in_still_being_measured_is_not_measured(tmp_path):
    """A twin with trials still to run is left out (its claims not run), not judged on the trials so
    far; one whose missing trials failed their fidelity checks is measured, on fewer trials (‡)."""
    cfg = load_paper("collateral")
    alt = next(a for a in cfg.alternatives if a.key == "queue_accounting.dummynet")
    results = tmp_path / "results"
    measured(results, "cubic-rtt100-f1", "cubic-rtt100-f2")
    for cell, doc in (("cubic-rtt100-f1", {"expected_trials": 5, "n_valid": 2, "excluded": [], "complete": False}),
                      ("cubic-rtt100-f2", {"expected_trials": 5, "n_valid": 3, "complete": False,
                                           "excluded": [{"trial": 1}, {"trial": 4}]})):
        (results / alt.twins[cell]).mkdir(parents=True)
        (results / alt.twins[cell] / "cell.json").write_text(json.dumps(doc))
    touched, missing = robustness.overlay(cfg, results, alt, tmp_path / "alt")
    assert sorted(touched) == ["cubic-rtt100-f1", "cubic-rtt100-f2"] and missing == ["cubic-rtt100-f1"]
    assert {p.name for p in (tmp_path / "alt").iterdir()} == {"cubic-rtt100-f2"}
    assert robustness.short_of_trials(results, alt, ["cubic-rtt100-f2"]) == {
        "cubic-rtt100-f2": f"{alt.twins['cubic-rtt100-f2']} (3/5)"}


def test_trials_copied_in_without_their_cell_json_stop_the_judging_with_the_fix(tmp_path, capsys):
    """A cell holding finished trials but no cell.json would read as never measured: the judging
    refuses to run rather than call its claims not evaluated."""
    results = tmp_path / "results" / "full" / "collateral"
    measured(results, "cubic-rtt50-f1")
    (results / "cubic-rtt50-f2" / "trial-1").mkdir(parents=True)
    (results / "cubic-rtt50-f2" / "trial-1" / "summary.json").write_text("{}")
    (results / "cubic-rtt50-f5" / "trial-1.partial").mkdir(parents=True)      # no summary: not finished
    assert aggregate.unaggregated(results) == ["cubic-rtt50-f2"]
    assert robustness.main(["--paper", "collateral", "--profile", "full", "--results", str(results),
                            "--out", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert "1 cells hold trials but no cell.json (cubic-rtt50-f2)" in err and "analysis.aggregate" in err
    assert not (tmp_path / "out.json").exists()


def test_a_same_build_control_confirms_a_flip_or_says_it_is_no_evidence_of_the_choice():
    """Twins on another kernel than the reference, and a second sample on the twins' kernel: the
    alternative judged against that sample says whether each flip holds on one build (° , no †), does
    not (†, "= on one build", still a flip), or appears only there (a flip the mixed builds hid)."""
    d = doc(queue_q100=(True, {"a": "partly", "b": "partly", "c": "partly"}))
    alt = d["alternatives"][0]
    alt["builds"] = {"measured": ["um-new"], "reference": ["um-old"]}
    alt["other_build"] = {"cells": ["x"], "claims": ["a", "b", "c"]}
    alt["same_build"] = {"build": ["um-new"],
                         "base": {"a": "reproduced", "b": "partly", "c": "partly"},
                         "verdicts": {"a": "partly", "b": "partly", "c": "not reproduced"}}
    assert [robustness.control(alt, c) for c in "abc"] == ["flips", "holds", "flips"]
    assert not robustness.other_build(alt, "a") and robustness.other_build(alt, "b")
    assert [a["choice"] for a in robustness.flips(d, "c")] == ["queue"]           # hidden by the mixed builds
    table = robustness_table.lines(d)
    assert "| a | reproduced | **partly**° | depends on queue |" in table
    assert "| b | not reproduced | **partly**† (= on one build) | depends on queue |" in table
    assert "| c | partly | = (**not reproduced**° on one build) | depends on queue |" in table
    assert any(line.startswith("Same-build control:") and "`queue.q100`: on um-new" in line for line in table)
    assert robustness_table.favoured_flips(d) == {"a": ["queue.q100°"], "b": ["queue.q100† (not on one build)"],
                                                  "c": ["queue.q100°"]}
    line = status.favoured_flips_line(d, {"a", "b", "c"})
    assert "the flip is the choice's" in line and "does not move" in line


def dummynet_two_cells(tmp_path):
    """Collateral Damage's dummynet alternative, a results and a second-sample folder, and two of
    the cells it touches: the set-up of a same-build control."""
    cfg = load_paper("collateral")
    alt = next(a for a in cfg.alternatives if a.key == "queue_accounting.dummynet")
    return cfg, alt, tmp_path / "results", tmp_path / "sample", ["cubic-rtt100-f1", "cubic-rtt100-f2"]


def test_the_same_build_control_runs_only_where_the_sample_and_the_twins_share_one_build(tmp_path):
    """The control's base is the second sample, a twin's own second sample in place of the twin where
    one is measured; it runs only where those and the re-measured cells ran on one build."""
    cfg, alt, results, sample, cells = dummynet_two_cells(tmp_path)
    for c in cells:
        provenance(results, c, "old")
        provenance(results, alt.twins[c], "mid")
        provenance(sample, c, "new")
        for where in (results / c, results / alt.twins[c], sample / c):
            (where / "cell.json").write_text(json.dumps({"expected_trials": 2, "n_valid": 2}))
    base = robustness.sample_based(results, sample, tmp_path / "base")
    assert (base / cells[0]).resolve() == (sample / cells[0]).resolve()
    assert (base / alt.twins[cells[0]]).resolve() == (results / alt.twins[cells[0]]).resolve()
    args = ({}, frozenset(), "collateral", "full", tmp_path)
    assert robustness.same_build(cfg, sample, alt, cells, base, *args) is None      # twins on "mid"
    provenance(sample, "cubic-rtt100-f5", "new")                                     # not finished: no cell.json
    assert robustness.same_build(cfg, sample, alt, [*cells, "cubic-rtt100-f5"], base, *args) is None
    for c in cells:                                                                  # the twins' own second sample
        provenance(sample, alt.twins[c], "new")
        (sample / alt.twins[c] / "cell.json").write_text(json.dumps({"expected_trials": 2, "n_valid": 2}))
    base = robustness.sample_based(results, sample, tmp_path / "base2")
    assert (base / alt.twins[cells[0]]).resolve() == (sample / alt.twins[cells[0]]).resolve()
    (sample / cells[1] / "trial-2" / "provenance.json").write_text(json.dumps({"kernel": {"release": "other"}}))
    assert robustness.same_build(cfg, sample, alt, cells, base, *args) is None      # two builds in the sample


def test_the_twins_a_same_build_control_reads_get_the_alternatives_checks(tmp_path):
    """A twin's own second sample short of its trials marks the control's reading with ‡, in the
    cell and in the note that names the cells, as a short twin marks the alternative's."""
    cfg, alt, results, sample, cells = dummynet_two_cells(tmp_path)
    for c in cells:
        provenance(results, c, "old")
        for where in (results, sample):
            provenance(where, alt.twins[c], "new")
        provenance(sample, c, "new")
        for where in (results / c, results / alt.twins[c], sample / c, sample / alt.twins[c]):
            (where / "cell.json").write_text(json.dumps({"expected_trials": 2, "n_valid": 2}))
    short_twin = sample / alt.twins[cells[0]]
    (short_twin / "cell.json").write_text(json.dumps({"expected_trials": 2, "n_valid": 1, "complete": False,
                                                      "excluded": [2]}))
    base = robustness.sample_based(results, sample, tmp_path / "base")
    got = robustness.same_build(cfg, sample, alt, cells, base, {}, frozenset(), "collateral", "full", tmp_path)
    assert got["build"] == ["new"] and got["short"]["cells"] == [f"{alt.twins[cells[0]]} (1/2)"]
    assert got["packed_elsewhere"]["cells"] == []
    d = doc(queue_q100=(True, {"a": "partly", "b": "partly", "c": "partly"}))
    a = d["alternatives"][0]
    a["same_build"] = {"build": ["um-new"], "base": {"a": "reproduced", "b": "partly", "c": "partly"},
                       "verdicts": {"a": "partly", "b": "partly", "c": "partly"},
                       "short": {"cells": ["twin (4/5)"], "claims": ["a", "b"]}}
    table = robustness_table.lines(d)
    assert "| a | reproduced | **partly**°‡ | depends on queue |" in table
    assert "| b | not reproduced | **partly** (= on one build‡) | depends on queue |" in table
    assert any("`queue.q100` (same-build control): twin (4/5)" in line for line in table)


def test_the_table_counts_the_cells_no_claim_reads_apart():
    d = doc(queue_q100=(True, {"a": "reproduced", "b": "not reproduced", "c": "partly"}))
    d["alternatives"][0].update(not_measured=["x", "y"], unread=["x", "y"])
    assert ("Cells measured under each alternative, of the reference's cells it touches: `queue.q100`: 1 of 3 "
            "(2 of them read by no claim, which the workflow does not measure).") in robustness_table.lines(d)
    assert robustness.summary(d, "a") == "robust"


def test_cells_named_unread_are_read_by_no_claim_of_the_committed_reference(tmp_path):
    """wlan's alternatives leave the ACK-queue sensitivity cells unmeasured because no claim reads
    them: judged on the committed reference (restored from data/), that holds; a cell a claim does
    read, named unread, stops the judging with the claims and the fix."""
    from archive import trials as arc
    arc.restore("full", ["wlan"], tmp_path / "results", jobs=2)
    cfg, results = load_paper("wlan"), tmp_path / "results" / "full" / "wlan"
    robustness.overlay(cfg, results, None, tmp_path / "ref")
    reference = robustness.verdicts_in("wlan", "full", tmp_path / "ref")
    alt = next(a for a in cfg.alternatives if a.key == "card_queue.ring8")
    robustness.unread_claims(cfg, results, alt, reference, "wlan", "full", tmp_path / "unread")
    read = dataclasses.replace(alt, unread=frozenset({"dl2-ul2-dataack-q100-mt6"}))
    with pytest.raises(robustness.UnreadIsRead, match=r"card_queue.ring8: unread.cells are read by .*scheduler_balances"
                                                      r".*drop those cells from `unread`"):
        robustness.unread_claims(cfg, results, read, reference, "wlan", "full", tmp_path / "read")
