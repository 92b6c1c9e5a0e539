"""Stale results: a trial's recorded spec against what the paper's config now gives its cell, field
by field, in verdict.md's account (analysis/report/provenance.py) and at the result-set level."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from analysis import staleness
from analysis.collateral.run import Run
from analysis.report.provenance import config_check, stale_lines
from experiments import load_paper


def test_differences_name_the_fields_and_ignore_what_is_not_run() -> None:
    spec = load_paper("collateral").trial_spec("cubic-rtt50-f2", 3, "full")
    same = {**spec, "trial": 5, "config_sha256": "f" * 64}          # another trial, another file version
    assert staleness.differences(same, spec) == [] and staleness.digest(same) == staleness.digest(spec)
    old = json.loads(json.dumps(spec))
    old["scenario"]["bottleneck"]["forward"]["limit_bytes"] = 30000
    old["flows"] = old["flows"][:1]
    diffs = staleness.differences(old, spec)
    assert ("scenario.bottleneck.forward.limit_bytes", 30000, 60000) in diffs
    assert any(k.startswith("flows[1].") and a is None for k, a, _ in diffs)          # absent in the old spec
    assert "scenario.bottleneck.forward.limit_bytes: 30000 -> 60000" in staleness.describe(diffs, limit=len(diffs))
    assert staleness.describe(diffs, limit=1).endswith(f"and {len(diffs) - 1} more")


def _trial(root: Path, cell_id: str, k: int, spec: dict) -> None:
    d = root / cell_id / f"trial-{k}"
    d.mkdir(parents=True)
    (d / "spec.json").write_text(json.dumps(spec))


def test_verdict_md_names_the_stale_trials(tmp_path: Path) -> None:
    cfg = load_paper("collateral")
    root = tmp_path / "results"
    for k in (1, 2):
        _trial(root, "cubic-rtt50-f1", k, {**cfg.trial_spec("cubic-rtt50-f1", k, "full"), "config_sha256": "a" * 64})
    old = cfg.trial_spec("cubic-rtt50-f1", 3, "full")
    old["duration_s"] = 120
    _trial(root, "cubic-rtt50-f1", 3, old)
    (root / "cubic-rtt50-f1" / "cell.json").write_text(json.dumps({"n_valid": 3, "trials": [1, 2, 3], "metrics": {}}))
    run = Run.load("full", root, tmp_path / "out")
    check = config_check(run)
    assert check["trials_from_other_config_versions"] == 2
    assert check["stale_trials"] == {"cubic-rtt50-f1/trial-3": "duration_s: 120 -> 180"}
    assert len(check["cell_specs"]["cubic-rtt50-f1"]) == 2                   # two different specs ran
    text = "\n".join(stale_lines(check))
    assert "**Stale: 1 valid trial(s)" in text and "- cubic-rtt50-f1/trial-3: duration_s: 120 -> 180" in text
    fresh = "\n".join(stale_lines({**check, "stale_trials": {}}))
    assert "Every valid trial ran what the paper's config now describes" in fresh and "2 came from an earlier" in fresh


def test_result_set_level_check() -> None:
    cfg = load_paper("collateral")
    spec = cfg.trial_spec("cubic-rtt50-f1", 1, "full")

    def now(cell_id: str) -> dict | None:
        return spec if cell_id == "cubic-rtt50-f1" else None

    ran = {"config": {"cell_specs": {"cubic-rtt50-f1": [staleness.digest(spec)]}}}
    assert staleness.result_set_lines(ran, "config/collateral.yaml", cfg.sha256, now) == []
    gone = {"config": {"cell_specs": {"cubic-rtt50-f9": ["0" * 16]}}}
    assert "cubic-rtt50-f9; regenerate" in staleness.result_set_lines(gone, "c.yaml", cfg.sha256, now)[0]
    old_style = {"config_sha256": ["1" * 64]}                               # made before specs were recorded
    assert "another version of c.yaml" in staleness.result_set_lines(old_style, "c.yaml", cfg.sha256, now)[0]
    assert staleness.result_set_lines({"config_sha256": [cfg.sha256]}, "c.yaml", cfg.sha256, now) == []


def test_what_a_lane_adds_is_not_a_change_of_the_config() -> None:
    """The virtual-time lane's seeded start offsets and bulk generator leave a trial current."""
    from testbed import variation

    spec = load_paper("collateral").trial_spec("cubic-rtt50-f2", 2, "full")
    varied = variation.apply(spec)
    assert staleness.digest(varied) == staleness.digest(spec)
    assert staleness.differences(varied, spec) == []


def test_another_bulk_generator_is_another_procedure() -> None:
    """iperf3 and iperf2 do not drive TCP alike (config/workflow.yaml): a trial that ran the other,
    or whose spec names none, is stale against a config that names iperf2."""
    spec = load_paper("collateral").trial_spec("cubic-rtt50-f2", 2, "full")
    assert spec["bulk_generator"] == "iperf2"
    assert staleness.differences({**spec, "bulk_generator": "iperf3"}, spec) == [("bulk_generator", "iperf3", "iperf2")]
    old = {k: v for k, v in spec.items() if k != "bulk_generator"}
    assert staleness.differences(old, spec) == [("bulk_generator", None, "iperf2")]


def test_a_generator_that_drove_no_flow_is_no_change() -> None:
    """LEDBAT's transfers are all fixed-size, iperf2 on every lane: its trials from before specs
    named a generator ran what they run now."""
    spec = load_paper("ledbat").trial_spec("ledbat-rtt40-n2-100mb", 1, "full")
    assert all(f.get("bytes") for f in spec["flows"] if f["kind"] == "bulk")
    old = {k: v for k, v in spec.items() if k != "bulk_generator"}
    assert staleness.differences(old, spec) == []


def test_a_fixed_size_trials_bound_is_a_guard_not_what_ran() -> None:
    """LEDBAT's trials end when their transfers do: a raised bound leaves a valid trial current. A
    timed trial's duration is what it ran."""
    cfg = load_paper("ledbat")
    spec = cfg.trial_spec("ledbat-rtt40-n2-30mb", 1, "full")
    old = json.loads(json.dumps(spec))
    old["duration_s"] = old["scenario"]["duration_s"] = old["params"]["bound_s"] = 140
    assert spec["duration_s"] != 140
    assert staleness.differences(old, spec) == [] and staleness.digest(old) == staleness.digest(spec)
    old["scenario"]["bottleneck"]["forward"]["limit_packets"] = 30
    assert [k for k, _, _ in staleness.differences(old, spec)] == ["scenario.bottleneck.forward.limit_packets"]
    timed = load_paper("collateral").trial_spec("cubic-rtt50-f2", 1, "full")
    shorter = {**json.loads(json.dumps(timed)), "duration_s": 60}
    assert ("duration_s", 60, timed["duration_s"]) in staleness.differences(shorter, timed)


def test_a_simulated_trial_of_other_model_sources_is_stale(tmp_path: Path) -> None:
    """A simulated trial's provenance names the model sources it ran: against the checkout's (a
    binary rebuilt after the trials does not rerun them, rules/common.smk), other sources are stale."""
    from analysis.wlan.run import Run as WlanRun
    from sim.build import sources_sha256

    cfg = load_paper("wlan")
    root = tmp_path / "results"
    cell = "dl1-ul1-fifo-q100-mt1"
    for k, sources in ((1, sources_sha256("wlan_dcf")), (2, "0" * 64)):
        _trial(root, cell, k, cfg.trial_spec(cell, k, "full"))
        prov = {"simulator": {"sources_sha256": sources}}
        (root / cell / f"trial-{k}" / "provenance.json").write_text(json.dumps(prov))
    (root / cell / "cell.json").write_text(json.dumps({"n_valid": 2, "trials": [1, 2], "metrics": {}}))
    check = config_check(WlanRun.load("full", root, tmp_path / "out"))
    assert check["stale_trials"] == {
        f"{cell}/trial-2": f'model sources (sha256): "{"0" * 16}" -> "{sources_sha256("wlan_dcf")[:16]}"'}


def test_trials_of_sources_a_rerun_showed_equivalent_are_current(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Sources recorded as giving the current sources' output (sim/equivalence.py), directly or
    through a chain of checks, do not make a trial stale; unrecorded ones still do."""
    from analysis.wlan.run import Run as WlanRun
    from sim import equivalence
    from sim.build import sources_sha256

    current = sources_sha256("wlan_dcf")
    record = tmp_path / "equivalent_sources.yaml"
    monkeypatch.setattr(equivalence, "record_path", lambda model: record)
    record.write_text(yaml.safe_dump([
        {"model": "wlan_dcf", "ran": "a" * 64, "same_as": "b" * 64, "trials": ["x/trial-1"]},
        {"model": "wlan_dcf", "ran": "b" * 64, "same_as": current, "trials": ["y/trial-2"]},
        {"model": "other", "ran": "c" * 64, "same_as": current, "trials": ["z/trial-3"]}]))
    assert equivalence.same_sources("wlan_dcf", "a" * 64, current)
    assert not equivalence.same_sources("wlan_dcf", "c" * 64, current)   # another model's record
    assert not equivalence.same_sources("wlan_dcf", current, "a" * 64)   # a check goes one way
    cfg = load_paper("wlan")
    root = tmp_path / "results"
    cell = "dl1-ul1-fifo-q100-mt1"
    for k, sources in ((1, "a" * 64), (2, "c" * 64)):
        _trial(root, cell, k, cfg.trial_spec(cell, k, "full"))
        prov = {"simulator": {"sources_sha256": sources}}
        (root / cell / f"trial-{k}" / "provenance.json").write_text(json.dumps(prov))
    (root / cell / "cell.json").write_text(json.dumps({"n_valid": 2, "trials": [1, 2], "metrics": {}}))
    check = config_check(WlanRun.load("full", root, tmp_path / "out"))
    assert list(check["stale_trials"]) == [f"{cell}/trial-2"]
    assert check["trials_of_equivalent_model_sources"] == 1
    # a new check reruns trials of the newest sources a results folder holds; trials of sources
    # recorded as equivalent to them count with them, unjoined ones are refused
    assert equivalence.newest("wlan_dcf", {"a" * 64, "b" * 64}) == {"b" * 64}
    assert equivalence.newest("wlan_dcf", {"a" * 64, "c" * 64}) == {"a" * 64, "c" * 64}


def test_the_rerun_sample_shows_every_value_of_every_scenario_field() -> None:
    """The equivalence check's cover: every (field, value) of the archived cells' scenarios is in
    one of the chosen trials, each cell at most once, with rotating trial indices."""
    from sim.equivalence import Trial, cover

    cfg = load_paper("wlan")
    trials = [Trial(cid, Path(f"r/{cid}/trial-{k}"), cfg.trial_spec(cid, k, "full"), "x")
              for cid in cfg.cells_by_id for k in (1, 2, 3, 4, 5)]
    chosen = cover(trials)
    values = {(f, json.dumps(v, sort_keys=True)) for t in trials for f, v in t.spec["scenario"].items()}
    shown = {(f, json.dumps(v, sort_keys=True)) for t in chosen for f, v in t.spec["scenario"].items()}
    assert shown == values
    assert len({t.cell for t in chosen}) == len(chosen) < len(cfg.cells_by_id) / 5
    assert len({t.path.name for t in chosen}) > 1


def test_a_field_named_later_with_the_value_trials_ran_unnamed_is_no_change() -> None:
    """config/wlan.yaml's implicit_before_named: a spec recorded before the stations' circle was a
    field ran the model's built-in 0.45 m; a cell that names another radius is still a change, and
    a spec that names the field keeps its own value."""
    cfg = load_paper("wlan")
    implicit = cfg.data["implicit_before_named"]
    spec = cfg.trial_spec("dl1-ul1-fifo-q100-mt1", 1, "full")
    old = json.loads(json.dumps(spec))
    del old["scenario"]["station_radius_m"]
    assert staleness.differences(old, spec) == [("scenario.station_radius_m", None, 0.45)]
    assert staleness.differences(old, spec, implicit) == []
    assert staleness.digest(old, implicit) == staleness.digest(spec)
    capture = cfg.trial_spec("dl1-ul1-fifo-capture-q100-mt1", 1, "full")
    assert ("scenario.station_radius_m", 0.45, 5) in staleness.differences(old, capture, implicit)
    assert staleness.with_implicit(capture, implicit)["scenario"]["station_radius_m"] == 5
    assert "station_radius_m" not in old["scenario"]                        # the recorded spec is left as it was


def test_verdict_md_counts_the_trials_read_with_a_field_they_did_not_name(tmp_path: Path) -> None:
    from analysis.wlan.run import Run as WlanRun

    cfg = load_paper("wlan")
    root = tmp_path / "results"
    for k in (1, 2):
        spec = json.loads(json.dumps(cfg.trial_spec("dl1-ul1-fifo-q100-mt1", k, "full")))
        if k == 1:
            del spec["scenario"]["station_radius_m"]
        _trial(root, "dl1-ul1-fifo-q100-mt1", k, spec)
    (root / "dl1-ul1-fifo-q100-mt1" / "cell.json").write_text(json.dumps({"n_valid": 2, "trials": [1, 2],
                                                                          "metrics": {}}))
    check = config_check(WlanRun.load("full", root, tmp_path / "out"))
    assert check["stale_trials"] == {} and check["trials_read_with_implicit_fields"] == 1
    assert len(check["cell_specs"]["dl1-ul1-fifo-q100-mt1"]) == 1                 # one experiment ran
    assert "1 recorded a spec from before a field was named" in "\n".join(stale_lines(check))
