"""The 802.11b paper's config, the simulated-scenario schema, provenance of simulated trials, the
model's build prerequisites and where the doctor places simulated cells."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from analysis import validate
from configuration.load import NOT_PAPERS, ConfigError
from experiments import load_paper
from sim import build
from testbed import lane as lanes
from testbed import placement
from testbed.kernel_features import Check

ROOT = Path(__file__).resolve().parents[2]
WLAN = ROOT / "config" / "wlan.yaml"


def variant(tmp_path: Path, mutate: Any) -> Path:
    data = yaml.safe_load(WLAN.read_text())
    mutate(data)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_matrix_profiles_and_trial_spec() -> None:
    cfg = load_paper("wlan")
    assert cfg.simulated
    # 30 setups x M_t 1-8; the investigations (extra_matrices): ACK queues 3, dl1-ul1's Linux and card
    # settings 3, channel errors 10, a stream per cell 6, capture 12, idle time per access 5 + 4
    assert len(cfg.cells_by_id) == 30 * 8 + 3 + 3 + 10 + 6 + 12 + 9
    assert len(cfg.cells("quick")) == 56 and len(cfg.cells("smoke")) == 1
    spec = cfg.trial_spec("dl4-ul1-adaptive-q100-mt8", 3, "full")
    assert (spec["duration_s"], spec["warmup_s"], spec["trial"]) == (500, 50, 3)
    sc = spec["scenario"]
    assert (sc["down"], sc["up"], sc["max_tx_attempts"], sc["ap_queue_pkts"], sc["scheduler"]) == (4, 1, 8, 100,
                                                                                                   "adaptive")
    assert [(f["id"], f["station"]) for f in spec["flows"]] == [("down1", 1), ("down2", 2), ("down3", 3),
                                                                 ("down4", 4), ("up1", 5)]
    assert cfg.cells_by_id["dl4-ul4-dataack-ackq1000-q100-mt2"].scenario["ack_queue_pkts"] == 1000
    # a matrix parameter's default is every other cell's value, set explicitly for the model
    sc = {c: cfg.cells_by_id[c].scenario for c in ("dl1-ul1-fifo-q100-mt6", "dl1-ul1-fifo-streams-q100-mt6",
                                                   "dl1-ul1-fifo-macq8-q100-mt1", "dl2-ul2-fifo-capture-q25-mt2",
                                                   "dl1-ul1-fifo-capture-aifsn12-q100-mt3")}
    assert [(s["seed"], s["mac_queue_pkts"], s["station_radius_m"], s["aifsn"]) for s in sc.values()] == [
        (1, 2, 0.45, 2), (6, 2, 0.45, 2), (1, 8, 0.45, 2), (1, 2, 5, 2), (1, 2, 5, 12)]


def test_every_paper_config_still_loads() -> None:
    papers = [p for p in (ROOT / "config").glob("*.yaml") if p.stem not in NOT_PAPERS]
    papers += list((ROOT / "tests" / "data" / "papers").glob("*.yaml"))
    for path in papers:
        cfg = load_paper(path)
        assert cfg.cells_by_id, path
        assert cfg.simulated == (cfg.data["scenario"]["topology"] == "wlan")


@pytest.mark.parametrize(("mutate", "named"), [
    (lambda d: d["matrix"]["setup"][3].update(sched="wrr"), "scenario.scheduler': 'wrr' is not one of"),
    (lambda d: d["scenario"].update(scheduler="priority"), "scenario.scheduler"),
    (lambda d: d["matrix"].update(mt=[0]), "scenario.max_tx_attempts': 0 is less than the minimum of 1"),
    (lambda d: d["scenario"].pop("seed"), "'seed' is a required property"),
    (lambda d: d["scenario"].update(tcp="TcpVegasX"), "scenario.tcp"),
    (lambda d: d["scenario"].update(topology="wlan2"), "scenario.topology"),
    (lambda d: d["scenario"].update(queue_split="shared"), "ack_queue_pkts: applies only to queue_split each"),
    (lambda d: d["matrix"]["setup"][0].update(down=0, up=0), "down and up are both 0"),
    (lambda d: d["profiles"]["quick"].pop("warmup_s"), "profiles.quick.warmup_s"),
    (lambda d: d["profiles"]["full"].update(warmup_s=500), "profiles.full.warmup_s': 500 is not below"),
    (lambda d: d["reference"]["claims"][0].update(id="Not an id"), "reference.claims[0].id"),
        (lambda d: d["reference"]["claims"][0]["bars"]["rounding_pkts_s"].pop("why"), "reference.claims[0].bars"),
    (lambda d: d["reference"]["figures"]["fig2"].update(quantity="cwnd"), "reference.figures.fig2.quantity"),
    (lambda d: d["reference"].pop("choices"), "'choices' is a required property"),
])
def test_bad_field_is_named(tmp_path: Path, mutate: Any, named: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_paper(variant(tmp_path, mutate))
    assert named in str(err.value)


def test_measured_papers_may_not_set_a_warmup(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "config" / "westwood.yaml").read_text())
    data["profiles"]["quick"]["warmup_s"] = 5
    path = tmp_path / "ww.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="only simulated papers"):
        load_paper(path)


def sim_provenance() -> dict[str, Any]:
    return {
        "schema": "tcprepro.provenance/1", "kind": "simulation",
        "kernel": {"release": "6.1.0", "where": "host", "accel": None},
        "paper": "wlan", "cell": "dl1-ul1-fifo-q100-mt1", "trial": 2, "config_sha256": "ab" * 32,
        "simulator": {"name": "ns-3", "version": "ns-3 3.37", "package": "libns3-dev 3.37-2",
                      "model": "sim/wlan/wlan_dcf.cc", "sources_sha256": "cd" * 32, "binary": "build/wlan/wlan_dcf",
                      "binary_sha256": "ef" * 32, "compiler": "g++ 12.2.0", "build_command": ["g++", "x.cc"]},
        "command": ["build/wlan/wlan_dcf", "--run=2"], "rng": {"seed": 1, "run": 2},
        "tools": {"python": "3.11"}, "fidelity": [], "timing": {"simulation_s": 3.0},
    }


def test_simulated_provenance_validates_and_needs_its_own_fields() -> None:
    validate(sim_provenance(), "provenance")
    for drop in ("simulator", "rng", "command"):
        doc = copy.deepcopy(sim_provenance())
        doc.pop(drop)
        with pytest.raises(jsonschema.ValidationError):
            validate(doc, "provenance")
    doc = sim_provenance()
    doc.pop("kind")                             # without kind it is a measurement: port_base etc. required
    with pytest.raises(jsonschema.ValidationError, match="port_base"):
        validate(doc, "provenance")


def test_missing_compiler_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build.shutil, "which", lambda _name: None)
    with pytest.raises(build.BuildError) as err:
        build.prerequisites()
    assert "g++" in str(err.value) and "make deps" in str(err.value) and "libns3-dev" in str(err.value)


def test_simulated_cells_run_on_the_host_in_every_mode() -> None:
    scenario = load_paper("wlan").cells_by_id["dl1-ul1-fifo-q100-mt1"].scenario
    need = placement.needs(scenario)
    assert need == {"tool:ns3"}
    ok = Check("tool:ns3", True, "libns3-dev 3.37")
    survey = placement.Survey({"tool:ns3": ok}, {"tool:ns3": ok}, [], "6.1.0", "6.1.0")
    for mode in placement.KERNEL_MODES:
        assert placement._place(need, survey, mode, need)[0] is lanes.SIMULATED   # its model, on the host
    missing = placement.Survey({"tool:ns3": Check("tool:ns3", False, "no g++", build.FIX)}, {}, [], "6.1.0", None)
    assert placement._place(need, missing, "vm", need)[0] is None
