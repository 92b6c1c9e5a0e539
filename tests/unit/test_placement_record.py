"""Placement decides once and is recorded: the workflow hands its decision to the trial jobs
(TCPREPRO_PLACED), a trial takes it (checked against the survey), the spec records the lane, and
the spec's lane is not a field of staleness (testbed/placement.py, testbed/run.py)."""
from __future__ import annotations

import json

import pytest

from analysis import staleness
from experiments import load_paper
from testbed import lane as lanes
from testbed import placement
from testbed.kernel_features import Check
from testbed.run import finish_spec

CELL = "cubic-rtt50-f1"


def _survey(uml_ok: bool) -> placement.Survey:
    need = placement.needs(load_paper("collateral").cells_by_id[CELL].scenario)
    ok = {n: Check(n, True, "") for n in need}
    uml = ok if uml_ok else {**ok, "cc:cubic": Check("cc:cubic", False, "not built in", "rebuild the UML kernel")}
    return placement.Survey(host=ok, vm=ok, runner=[], host_release="6.1", vm_release="6.1-pinned",
                            uml=uml, uml_release="6.1-um")


def test_the_workflows_placement_reaches_its_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = placement.for_jobs({"collateral": {CELL: lanes.UML, "newreno-rtt50-f1": lanes.HOST, "x": None},
                               "wlan": {"w1": lanes.SIMULATED}})
    assert json.loads(text) == {"collateral": {"uml": [CELL], "host": ["newreno-rtt50-f1"]},
                                "wlan": {"sim": ["w1"]}}
    monkeypatch.setenv(placement.PLACED, text)
    assert placement.workflow_lane("collateral", CELL) is lanes.UML
    assert placement.workflow_lane("collateral", "newreno-rtt50-f1") is lanes.HOST
    assert placement.workflow_lane("collateral", "x") is None          # a cell it did not place
    assert placement.workflow_lane("westwood", CELL) is None
    monkeypatch.delenv(placement.PLACED)
    assert placement.workflow_lane("collateral", CELL) is None          # by hand: the trial places itself
    monkeypatch.setenv(placement.PLACED, "uml")
    with pytest.raises(placement.CannotRun, match="TCPREPRO_PLACED"):
        placement.workflow_lane("collateral", CELL)


def test_a_trial_takes_the_workflows_lane_or_refuses_one_that_now_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workflow's lane wins over the trial's own order (host here would come second to UML),
    and a lane that lost a feature since the workflow placed the cell is refused, with the fix."""
    cell = load_paper("collateral").cells_by_id[CELL]
    monkeypatch.setattr(placement, "take_survey", lambda **_: _survey(uml_ok=True))
    monkeypatch.setenv(placement.PLACED, placement.for_jobs({"collateral": {CELL: lanes.HOST}}))
    assert placement.cell_lane(cell) is lanes.HOST
    monkeypatch.setenv(placement.PLACED, placement.for_jobs({"collateral": {CELL: lanes.UML}}))
    assert placement.cell_lane(cell) is lanes.UML
    monkeypatch.setattr(placement, "take_survey", lambda **_: _survey(uml_ok=False))
    with pytest.raises(placement.CannotRun, match=r"placed it on the uml lane, which now lacks cc:cubic.*again"):
        placement.cell_lane(cell)


def test_the_spec_records_its_lane_and_stays_current() -> None:
    cfg = load_paper("collateral")
    configured = cfg.trial_spec(CELL, 2, "full")
    for lane in (lanes.UML, lanes.HOST):
        spec = finish_spec(configured, lane)
        assert spec["lane"] == lane.name and "lane" not in configured
        assert staleness.differences(spec, configured) == []
        assert staleness.digest(spec) == staleness.digest(configured)
