"""A committed result set without archived trials, judged again from its tables alone: nothing has a
noise estimate, so every comparison is missing and says why, and verdict.md keeps its other parts."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.paper_tables import build_table, write_table
from analysis.report import rejudge
from experiments import load_paper


def make_set(root: Path, n_valid: int) -> Path:
    """figures/collateral/full as a run leaves it: tables, verdicts, a verdict.md with its claims."""
    cfg = load_paper("collateral")
    d = root / "collateral" / "full"
    d.mkdir(parents=True)
    cells = {cid: {"n_valid": n_valid, "expected_trials": 5, "metrics": {
        "owd_median_ms": {"mean": m}, "owd_mean_ms": {"mean": m}, "goodput_kbyte_s": {"mean": 111.7}}}
        for cid, m in (("newreno-rtt50-f2", 407.9), ("htcp-rtt50-f2", 447.7), ("cubic-rtt50-f2", 443.4))}
    params = {cid: c.params for cid, c in cfg.cells_by_id.items()}
    for tid, spec in cfg.data["reference"]["tables"].items():
        write_table(build_table(tid, spec, cells, params), d)
    (d / "verdicts.json").write_text(json.dumps([{"claim": "htcp_below_newreno_1_2", "text": "t",
                                                  "verdict": "partly", "held": ["a"], "failed": ["b"], "missing": []}]))
    (d / "provenance.json").write_text(json.dumps({"paper": "collateral", "profile": "full"}))
    (d / "verdict.md").write_text("# Collateral: verdict\n\nCells measured: 3. Claims: 1 partly.\n\n"
                                  "## Claims\n\n### old: **partly**\n\n## Tables beside the paper\n\nkept\n")
    return d


def test_rejudged_from_tables_every_comparison_is_missing_and_says_why(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(rejudge.archive, "DATA", tmp_path / "data")
    d = make_set(tmp_path, 5)
    rejudge.main([str(d)])
    verdicts = {v["claim"]: v for v in json.loads((d / "verdicts.json").read_text())}
    h = verdicts["htcp_below_newreno_1_2"]
    assert h["verdict"] == "not evaluated" and not h["held"] and not h["failed"]
    assert "H-TCP 447.7 vs NewReno 407.9 ms median: no noise estimate: the trials' own values are not at hand" in \
        h["missing"][1]
    assert h["missing"][0].endswith("not measured, or not in the committed tables")   # 50 ms, 1 flow
    assert {v["verdict"] for v in verdicts.values()} == {"not evaluated"}
    assert "full_events_track_retransmissions" not in verdicts
    text = (d / "verdict.md").read_text()
    assert text.count("**Re-judged from the committed tables") == 1 and "## Tables beside the paper\n\nkept" in text
    n = sum(not c.get("beyond") for c in load_paper("collateral").data["reference"]["claims"])
    assert "### old" not in text and f"The paper's claims: {n} claims: {n} not evaluated." in text
    rejudge.main([str(d)])                                  # again: the same file
    assert (d / "verdict.md").read_text() == text


def test_one_trial_per_cell_says_so(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(rejudge.archive, "DATA", tmp_path / "data")
    d = make_set(tmp_path, 1)
    rejudge.rejudge(d)
    h = next(v for v in json.loads((d / "verdicts.json").read_text()) if v["claim"] == "htcp_below_newreno_1_2")
    assert "no noise estimate: 1 valid trial (needs 3)" in h["missing"][1]


def test_a_result_set_with_archived_trials_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(rejudge.archive, "DATA", tmp_path / "data")
    d = make_set(tmp_path, 5)
    (tmp_path / "data" / "full" / "collateral").mkdir(parents=True)
    (tmp_path / "data" / "full" / "collateral" / "MANIFEST.json").write_text(json.dumps({"c/trial-1": {}}))
    with pytest.raises(SystemExit, match="restore them"):
        rejudge.rejudge(d)
