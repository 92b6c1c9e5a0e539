"""The lanes' cross-validation (analysis/crossval/metrics.py): a difference counts only beyond the larger of
the two cells' trial ranges, and a cell without a range is said to have none, never passed."""
from __future__ import annotations

from pathlib import Path

from analysis.crossval import metrics as crossval
from experiments import load_paper


def snap(lane: str, values: dict[str, list[float]]) -> dict:
    cells = {}
    for cell, vals in values.items():
        stat = {"mean": sum(sorted(vals)[1:-1]) / (len(vals) - 2), "min": min(vals), "max": max(vals),
                "n": len(vals), "values": vals}
        cells[cell] = {"goodput_kbit_s": stat}
    return {"lane": lane, "paper": "westwood", "kernels": [lane], "source": "test", "cells": cells}


def test_differences_against_the_larger_trial_range(tmp_path: Path) -> None:
    a = snap("tcg", {"cubic-t1": [100, 101, 102, 103, 104], "cubic-t2": [100, 101, 102, 103, 104]})
    b = snap("uml", {"cubic-t1": [103, 103.5, 104, 104.5, 105], "cubic-t2": [110, 110, 110, 110, 110]})
    rows = {r.cell: r for r in crossval.compare(a, b, "substrate")}
    assert rows["cubic-t1"].status == "within spread" and rows["cubic-t1"].noise == 4
    assert rows["cubic-t2"].status == "beyond spread" and rows["cubic-t2"].diff == 8


def test_a_side_without_its_trials_range_is_not_judged() -> None:
    a = snap("tcg", {"cubic-t1": [100, 101, 102, 103, 104]})
    a["cells"]["cubic-t1"]["goodput_kbit_s"].update(min=None, max=None)
    b = snap("uml", {"cubic-t1": [100, 101, 102, 103, 104]})
    b["cells"]["cubic-t1"]["goodput_kbit_s"].update(min=None, max=None)
    (row,) = crossval.compare(a, b)
    assert row.status == "no spread known"


def test_snapshots_round_trip_and_missing_ones_are_skipped(tmp_path: Path, capsys) -> None:
    crossval.write_snapshot(snap("tcg", {"cubic-t1": [1, 2, 3, 4, 5]}), tmp_path)
    assert crossval.load_snapshot("tcg", "westwood", tmp_path)["cells"]["cubic-t1"]["goodput_kbit_s"]["min"] == 1
    assert crossval.comparisons(tmp_path) == []
    assert "no uml-iperf3 snapshot" in capsys.readouterr().err


def test_a_far_wider_spread_is_a_difference_even_when_the_means_are_close() -> None:
    """One trial in five that misbehaves on the new lane widens its range past any difference of
    means: the cell is flagged, not passed as within spread."""
    a = snap("tcg", {"cubic-t1": [52.0, 52.2, 52.3, 52.4, 52.5], "cubic-t2": [100, 101, 102, 103, 104]})
    b = snap("uml", {"cubic-t1": [52.1, 52.3, 52.4, 52.6, 148.0], "cubic-t2": [99, 101, 102, 104, 106]})
    rows = {r.cell: r for r in crossval.compare(a, b, "substrate")}
    assert rows["cubic-t1"].status == "wider spread"
    assert rows["cubic-t2"].status == "within spread"        # 7 against 4: not far wider


def test_a_merged_rerun_replaces_its_cells_and_keeps_the_others() -> None:
    old = snap("uml", {"cubic-t1": [1, 2, 3, 4, 5], "cubic-t2": [1, 2, 3, 4, 5]})
    new = snap("uml", {"cubic-t2": [6, 7, 8, 9, 10]}) | {"source": "rerun", "kernels": ["k2"]}
    merged = crossval.merge_snapshots(old, new)
    assert merged["cells"]["cubic-t1"] == old["cells"]["cubic-t1"]
    assert merged["cells"]["cubic-t2"]["goodput_kbit_s"]["values"] == [6, 7, 8, 9, 10]
    assert merged["source"] == "test; rerun" and merged["kernels"] == ["k2", "uml"]


def test_only_a_paper_whose_cross_validation_holds_or_names_its_lane_runs_on_the_virtual_time_lane() -> None:
    """The committed snapshots decide: a measured paper runs on UML (no `lane`, or `lane: uml`) only
    if every difference from the TCG references is within spread or explained, or if crossval.yaml
    names UML as its reference lane with the reason; a paper whose comparison holds stays on UML."""
    for paper, spec in crossval.config()["papers"].items():
        lane = load_paper(paper).data.get("lane", "uml")
        named = spec.get("reference_lane")
        if crossval.substrate_holds(paper):
            assert lane == "uml" and named is None, paper
        elif named is not None:
            assert named["lane"] == lane and len(named["why"].split()) >= 20, paper
        else:
            assert lane != "uml", paper
