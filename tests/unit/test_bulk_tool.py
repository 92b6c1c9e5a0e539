"""Figures name the program that ran a trial's bulk flows from the trial itself (its flows' logs, else
its provenance), never from a default: collateral's Fig 1 and Westwood+'s testbed figure."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from analysis.report.paper_run import bulk_tool

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("files", "recorded", "says"), [
    (["iperf2-bulk0-client.csv", "iperf2-bulk0-server.csv"], "iperf3", "iperf2"),   # the logs win
    (["iperf-bulk0.json"], None, "iperf3"),
    ([], "iperf2", "iperf2"),                                                          # no logs: provenance
    ([], None, "?"),
])
def test_the_logs_then_the_provenance_name_the_generator(tmp_path: Path, files: list[str], recorded: str | None,
                                                         says: str) -> None:
    for name in files:
        (tmp_path / name).write_text("")
    (tmp_path / "provenance.json").write_text(json.dumps({"bulk_generator": recorded} if recorded else {}))
    assert bulk_tool(tmp_path, ["bulk0"]) == says


def test_a_committed_collateral_trial_ran_iperf2(tmp_path: Path) -> None:
    with tarfile.open(REPO / "data/full/collateral/cubic-rtt100-f1/trial-1.tar.xz") as tar:
        for member in tar.getmembers():
            body = tar.extractfile(member)
            if "/" not in member.name and body is not None:      # the trial's own files, not earlier attempts
                (tmp_path / member.name).write_bytes(body.read())
    spec = json.loads((tmp_path / "spec.json").read_text())
    bulk = [f["id"] for f in spec["flows"] if f["kind"] == "bulk"]
    assert bulk_tool(tmp_path, bulk) == "iperf2"
