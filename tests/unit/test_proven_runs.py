"""testbed/proven_runs.py with the 802.11b model's proof (sim/wlan/model.py): which finished trial,
if any, a new trial's run is taken from. The trials here are folders as a finished run leaves them;
tests/integration/test_wlan_trial.py runs the model and checks the proof itself."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.wlan import model
from testbed import proven_runs

BINARY = "a" * 64
SCENARIO = {"model": "wlan_dcf", "down": 1, "up": 1, "max_tx_attempts": 6, "seed": 1}


def spec(mt: int, trial: int = 1, duration: float = 500) -> dict[str, object]:
    return {"trial": trial, "duration_s": duration, "warmup_s": 50, "scenario": {**SCENARIO, "max_tx_attempts": mt}}


def finished(root: Path, mt: int, final_failed: int, trial: int = 1, binary: str = BINARY, duration: float = 500,
             summary: bool = True) -> Path:
    d = root / f"dl1-ul1-mt{mt}-d{duration:g}" / f"trial-{trial}"
    d.mkdir(parents=True)
    (d / "spec.json").write_text(json.dumps(spec(mt, trial, duration)))
    (d / "provenance.json").write_text(json.dumps({"simulator": {"binary_sha256": binary}}))
    (d / model.RAW).write_text(json.dumps({"maxTxAttempts": mt, "ns3_max_ssrc": mt, "run_final_failed": final_failed,
                                           "down_rx_bytes": 1000 * mt}))
    if summary:
        (d / "summary.json").write_text("{}")
    return d


def partial(root: Path, mt: int, trial: int = 1) -> Path:
    p = root / f"dl1-ul1-mt{mt}" / f"trial-{trial}.partial"
    p.mkdir(parents=True)
    return p


def test_the_largest_smaller_m_t_that_gave_up_no_frame_is_taken(tmp_path: Path) -> None:
    finished(tmp_path, 3, 0)
    finished(tmp_path, 4, 0)
    finished(tmp_path, 5, 2)
    found = proven_runs.find(spec(6), partial(tmp_path, 6), BINARY, model)
    assert found is not None and found.source() == "dl1-ul1-mt4-d500/trial-1"
    raw, derived = proven_runs.take(found, spec(6), partial(tmp_path, 7), model)
    assert raw == {"maxTxAttempts": 6, "ns3_max_ssrc": 6, "run_final_failed": 0, "down_rx_bytes": 4000}
    assert derived["rewritten"] == {"maxTxAttempts": [4, 6], "ns3_max_ssrc": [4, 6]}
    assert "M_t = 4" in derived["proof"]


def test_nothing_proves_a_run_unless_all_of_it_matches(tmp_path: Path) -> None:
    finished(tmp_path, 2, 1)                                    # gave up a frame
    finished(tmp_path, 3, 0, trial=2)                           # another RNG run
    finished(tmp_path, 4, 0, binary="b" * 64)                   # another binary
    finished(tmp_path, 5, 0, duration=100)                      # another duration
    finished(tmp_path, 1, 0, summary=False)                     # not finished
    finished(tmp_path, 7, 0)                                    # a larger M_t proves nothing
    assert proven_runs.find(spec(6), partial(tmp_path, 6), BINARY, model) is None


def test_simulate_all_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    finished(tmp_path, 4, 0)
    monkeypatch.setenv("TCPREPRO_SIMULATE_ALL", "1")
    assert proven_runs.find(spec(6), partial(tmp_path, 6), BINARY, model) is None
