"""analysis.aggregate: the papers' drop-highest-and-lowest mean, and cell.json assembly."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from analysis.aggregate import SummaryError, aggregate_cell, trimmed_stats, write_cell


def test_trimmed_mean_of_five() -> None:
    s = trimmed_stats([4, 100, 2, 1, 3])
    assert (s["mean"], s["method"], s["n"], s["min"], s["max"]) == (3.0, "trimmed", 5, 1.0, 100.0)
    assert s["std"] == pytest.approx(1.0)  # sample std of the kept 2, 3, 4


def test_trimmed_mean_other_n() -> None:
    four = trimmed_stats([1, 2, 3, 10])
    assert (four["mean"], four["method"]) == (2.5, "trimmed")
    assert four["std"] == pytest.approx(math.sqrt(0.5))
    three = trimmed_stats([5, 1, 9])
    assert (three["mean"], three["std"], three["method"]) == (5.0, None, "trimmed")
    two = trimmed_stats([1, 4])
    assert (two["mean"], two["method"]) == (2.5, "mean")
    assert two["std"] == pytest.approx(math.sqrt(4.5))
    one = trimmed_stats([7])
    assert (one["mean"], one["std"], one["min"], one["max"], one["method"]) == (7.0, None, 7.0, 7.0, "mean")
    with pytest.raises(ValueError):
        trimmed_stats([])


def _summary(d: Path, trial: int, metrics: dict[str, Any], valid: bool = True) -> Path:
    """A trial's summary.json as the trial writes it: its cell is its folder's parent."""
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({
        "schema": "tcprepro.summary/1", "paper": "collateral", "cell": d.parent.name, "trial": trial,
        "valid": valid, "invalid_reasons": [] if valid else ["fidelity base_rtt"],
        "metrics": metrics, "flows": [],
    }))
    return d


def test_aggregate_cell(tmp_path: Path) -> None:
    cell = tmp_path / "collateral" / "cubic-rtt50-f1"
    goodput = {1: 111.9, 2: 112.0, 3: 111.7, 4: 250.0, 5: 111.8}
    dirs = [_summary(cell / f"trial-{k}", k, {"goodput_kbyte_s": v, "owd_median_ms": 10.0 * k})
            for k, v in goodput.items()]
    dirs.append(_summary(cell / "trial-6", 6, {"goodput_kbyte_s": 0.0}, valid=False))
    (cell / "trial-7").mkdir()  # no summary (crashed before writing it)
    dirs.append(cell / "trial-7")
    c = aggregate_cell(reversed(dirs))
    assert (c["paper"], c["cell"], c["n_valid"], c["complete"]) == ("collateral", "cubic-rtt50-f1", 5, True)
    assert c["trials"] == [1, 2, 3, 4, 5]
    assert [(e["trial"], e["reasons"]) for e in c["excluded"]] == [
        (6, ["fidelity base_rtt"]), (7, ["no summary.json"])]
    g = c["metrics"]["goodput_kbyte_s"]
    assert g["values"] == [111.9, 112.0, 111.7, 250.0, 111.8]
    assert g["mean"] == pytest.approx((111.9 + 112.0 + 111.8) / 3)  # 250 and 111.7 dropped
    assert (g["min"], g["max"], g["n"], g["method"]) == (111.7, 250.0, 5, "trimmed")
    assert g["std"] == pytest.approx(0.1)
    assert c["metrics"]["owd_median_ms"]["mean"] == pytest.approx(30.0)


def test_incomplete_cell_and_sparse_metric(tmp_path: Path) -> None:
    cell = tmp_path / "c"
    dirs = [_summary(cell / "trial-1", 1, {"a": 1.0, "b": 5.0}), _summary(cell / "trial-2", 2, {"a": 3.0})]
    c = aggregate_cell(dirs)
    assert (c["n_valid"], c["complete"], c["expected_trials"]) == (2, False, 5)
    assert (c["metrics"]["a"]["mean"], c["metrics"]["a"]["method"]) == (2.0, "mean")
    assert (c["metrics"]["b"]["n"], c["metrics"]["b"]["trials"]) == (1, [1])
    assert aggregate_cell(dirs, expected_trials=2)["complete"] is True


def test_write_cell_ignores_partial_dirs(tmp_path: Path) -> None:
    cell = tmp_path / "c"
    for k in (1, 2, 3):
        _summary(cell / f"trial-{k}", k, {"x": float(k)})
    _summary(cell / "trial-4.partial", 4, {"x": 100.0})
    out = write_cell(cell, expected_trials=3)
    doc = json.loads(out.read_text())
    assert out == cell / "cell.json"
    assert (doc["complete"], doc["trials"], doc["metrics"]["x"]["mean"]) == (True, [1, 2, 3], 2.0)


@pytest.mark.parametrize(("edit", "says"), [
    (lambda s: s.update(trial=3), "names trial 3, its folder is trial-2"),
    (lambda s: s.update(cell="htcp-rtt50-f1"), "names cell 'htcp-rtt50-f1', its folder is 'cubic-rtt50-f1'"),
    (lambda s: s.update(paper="westwood"), "names paper 'westwood', its folder is 'collateral'"),
    (lambda s: s["metrics"].update(goodput_kbyte_s=999.0), "goodput_kbyte_s = 999 is beyond what its 1000-kbit/s"),
    (lambda s: s["metrics"].update(goodput_kbit_s=-5.0), "goodput_kbit_s = -5 is beyond"),
])
def test_a_summary_that_is_not_its_trials_stops_the_cell(tmp_path: Path, edit: Any, says: str) -> None:
    """An edited summary.json (another cell's or trial's, or a goodput its 1-Mbit/s link cannot carry)
    is named and aggregated into nothing: the command exits 2 and writes no cell.json."""
    cell = tmp_path / "collateral" / "cubic-rtt50-f1"
    for k in (1, 2, 3):
        d = _summary(cell / f"trial-{k}", k, {"goodput_kbyte_s": 111.9, "goodput_kbit_s": 895.0})
        (d / "spec.json").write_text(json.dumps({"scenario": {"bottleneck": {
            "forward": {"rate_kbit": 1000}, "reverse": {"rate_kbit": 1000}}}}))
    path = cell / "trial-2" / "summary.json"
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(SummaryError, match=says.replace("(", r"\(").replace(")", r"\)")):
        aggregate_cell(sorted(cell.glob("trial-*")))
    proc = subprocess.run([sys.executable, "-m", "analysis.aggregate", "--expected", "3", str(cell)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: {path}") and says in proc.stderr
    assert not (cell / "cell.json").exists()
