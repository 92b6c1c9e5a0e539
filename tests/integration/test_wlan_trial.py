"""Simulated 802.11b trials through `tcprepro trial`: the real ns-3 model (built from sim/wlan/),
short runs (12 s simulated, 1-2 s of CPU each; tests/data/papers/wlanshort.yaml)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis import validate
from sim import build

CHECKOUT = Path(__file__).resolve().parents[2]
PAPERS = CHECKOUT / "tests" / "data" / "papers"

pytestmark = pytest.mark.skipif(not build.NS3_HEADER.exists(), reason="needs libns3-dev (make deps)")


def trial(out: Path, cell: str, paper_dir: Path = PAPERS, paper: str = "wlanshort",
          **kw: object) -> subprocess.CompletedProcess[str] | subprocess.Popen[str]:
    env = {**os.environ, "TCPREPRO_PAPER_DIR": str(paper_dir)}
    argv = [sys.executable, "-m", "tcprepro", "trial", "--paper", paper, "--cell", cell, "--trial", "1",
            "--profile", "smoke", "--out", str(out)]
    if kw.get("background"):
        return subprocess.Popen(argv, cwd=CHECKOUT, env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    return subprocess.run(argv, cwd=CHECKOUT, env=env, text=True, capture_output=True, timeout=300)


def running_in(folder: Path) -> list[str]:
    """Processes whose working folder is `folder` (the model runs in its trial's partial folder)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.readlink(proc / "cwd").removesuffix(" (deleted)") == str(folder):
                found.append(proc.name)
        except OSError:
            continue
    return found


def metrics(out: Path) -> dict[str, float]:
    return json.loads((out / "summary.json").read_text())["metrics"]


def test_scheduler_separates_data_from_acks(tmp_path: Path) -> None:
    wrr, fifo = (tmp_path / "wlanshort" / f"dl2-ul2-{s}" / "trial-1" for s in ("dataack", "fifo"))
    for out, cell in ((wrr, "dl2-ul2-dataack"), (fifo, "dl2-ul2-fifo")):
        proc = trial(out, cell)
        assert proc.returncode == 0, proc.stderr
        assert {p.name for p in out.iterdir()} >= {"spec.json", "wlan.json", "summary.json", "provenance.json",
                                                   "trial.log"}
        assert not list(out.parent.glob("*.partial"))
    m = metrics(wrr)
    # the classifier: every DATA segment in Q1, every pure ACK in Q2, and plenty of both
    assert m["ap_q1_enq_data"] > 500 and m["ap_q2_enq_ack"] > 200
    assert m["ap_q1_enq_ack"] == 0 and m["ap_q2_enq_data"] == 0
    assert m["ap_q2_deq_ack"] > 0 and m["ap_q1_deq_data"] > 0
    # the same flows through FIFO: one queue holds both kinds (the downlink starves there, so fewer
    # DATA), the second queue nothing
    f = metrics(fifo)
    assert f["ap_q1_enq_data"] > 100 and f["ap_q1_enq_ack"] > 200
    assert f["ap_q2_enq_ack"] == 0 and f["ap_q2_enq_data"] == 0
    prov = json.loads((wrr / "provenance.json").read_text())
    validate(prov, "provenance")
    assert prov["kind"] == "simulation" and prov["rng"] == {"seed": 1, "run": 1}
    binary = CHECKOUT / prov["simulator"]["binary"]
    assert hashlib.sha256(binary.read_bytes()).hexdigest() == prov["simulator"]["binary_sha256"]
    assert "--sched=dataack" in prov["command"] and f"--out={wrr}" in prov["command"]
    assert all(c["pass"] for c in prov["fidelity"]), prov["fidelity"]
    summary = json.loads((wrr / "summary.json").read_text())
    assert summary["valid"] and [fl["id"] for fl in summary["flows"]] == ["down1", "down2", "up1", "up2"]


def test_bad_scheduler_is_named_before_anything_runs(tmp_path: Path) -> None:
    papers = tmp_path / "papers"
    papers.mkdir()
    text = (PAPERS / "wlanshort.yaml").read_text().replace("sched: [fifo, dataack]", "sched: [fifo, roundrobin]")
    (papers / "wlanbad.yaml").write_text(text.replace("paper: wlanshort", "paper: wlanbad"))
    out = tmp_path / "results" / "trial-1"
    proc = trial(out, "dl2-ul2-fifo", papers, "wlanbad")
    assert proc.returncode == 2
    assert "scenario.scheduler" in proc.stderr and "'roundrobin' is not one of" in proc.stderr
    assert not (tmp_path / "results").exists()


def test_interrupted_trial_leaves_nothing_behind(tmp_path: Path) -> None:
    papers = tmp_path / "papers"
    papers.mkdir()
    long = (PAPERS / "wlanshort.yaml").read_text().replace("smoke: {duration_s: 12", "smoke: {duration_s: 3000")
    (papers / "wlanlong.yaml").write_text(long.replace("paper: wlanshort", "paper: wlanlong"))
    out = tmp_path / "results" / "wlanlong" / "dl2-ul2-fifo" / "trial-1"
    proc = trial(out, "dl2-ul2-fifo", papers, "wlanlong", background=True)
    assert isinstance(proc, subprocess.Popen)
    partial = out.with_name("trial-1.partial")
    deadline = time.monotonic() + 120
    while not (partial / "trial.log").exists() or "wlan_dcf" not in (partial / "trial.log").read_text():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "nothing left behind" in err
    assert not out.exists() and not partial.exists()
    assert not running_in(partial), "the model still runs"


def test_channel_errors_are_lost_at_their_rate(tmp_path: Path) -> None:
    """frame_error_rate: each receiver loses that share of full-size frames besides collisions; the
    trial's fidelity record measures it, and the MAC retries more than on the clean channel."""
    papers = tmp_path / "papers"
    papers.mkdir()
    text = (PAPERS / "wlanshort.yaml").read_text().replace("paper: wlanshort", "paper: wlannoisy")
    (papers / "wlannoisy.yaml").write_text(text.replace("  seed: 1\n", "  seed: 1\n  frame_error_rate: 0.1\n"))
    noisy, clean = (tmp_path / p / "dl2-ul2-fifo" / "trial-1" for p in ("wlannoisy", "wlanshort"))
    for out, paper_dir, paper in ((noisy, papers, "wlannoisy"), (clean, PAPERS, "wlanshort")):
        proc = trial(out, "dl2-ul2-fifo", paper_dir, paper)
        assert proc.returncode == 0, proc.stderr
    prov = json.loads((noisy / "provenance.json").read_text())
    record = next(c for c in prov["fidelity"] if c["name"] == "channel_frame_errors")
    assert record["pass"] and record["configured"] == 0.1 and abs(record["measured"] - 0.1) < 0.02
    assert "--frameErrorRate=0.1" in prov["command"]
    raw_noisy, raw_clean = (json.loads((d / "wlan.json").read_text()) for d in (noisy, clean))
    assert raw_noisy["phy_rx_full_frames"] > 1000 and "phy_rx_full_frames" not in raw_clean
    assert raw_noisy["mac_tx_failed_prob"] > raw_clean["mac_tx_failed_prob"] + 0.03
    assert not any(c["name"] == "channel_frame_errors"
                   for c in json.loads((clean / "provenance.json").read_text())["fidelity"])


def test_equivalence_rerun_finds_the_recorded_output_or_the_field_that_differs(tmp_path: Path) -> None:
    """sim/equivalence.py reruns an archived trial with the checkout's model: an untouched trial
    comes back equal field for field (ns-3 is deterministic), a recorded field changed by hand is
    named with both values."""
    from sim import equivalence

    out = tmp_path / "wlanshort" / "dl2-ul2-fifo" / "trial-1"
    proc = trial(out, "dl2-ul2-fifo")
    assert proc.returncode == 0, proc.stderr
    [archived] = equivalence.archived_trials(tmp_path / "wlanshort", "wlan_dcf")
    assert archived.sources == build.sources_sha256("wlan_dcf")
    binary = build.ensure("wlan_dcf", log=False).path
    same = equivalence.rerun(archived, binary, "wlan_dcf", tmp_path / "rerun")
    assert same.same and same.differing == [] and same.added == []
    raw = json.loads((out / "wlan.json").read_text())
    raw["down_rx_bytes"] += 1448
    (out / "wlan.json").write_text(json.dumps(raw))
    changed = equivalence.rerun(archived, binary, "wlan_dcf", tmp_path / "rerun2")
    assert not changed.same
    assert changed.differing == [("down_rx_bytes", raw["down_rx_bytes"], raw["down_rx_bytes"] - 1448)]


def test_every_event_scheduler_gives_the_same_run_and_an_unknown_one_is_named(tmp_path: Path) -> None:
    """The model runs on the calendar queue because it is the cheapest (docs/measurements.md), on the
    claim that every ns-3 scheduler orders events alike (time, then scheduling order): a contended
    run (2 down, 2 up, the DATA/ACK scheduler, retries) under each of ns-3's schedulers must give
    every recorded field but the wall clock equal."""
    binary = build.ensure("wlan_dcf", log=False).path
    args = ["--down=2", "--up=2", "--sched=dataack", "--maxTxAttempts=3", "--apQueue=25", "--duration=12",
            "--warmup=2", "--run=3", "--out=."]
    outputs = {}
    for scheduler in ("", "ns3::MapScheduler", "ns3::HeapScheduler", "ns3::ListScheduler"):
        folder = tmp_path / (scheduler.removeprefix("ns3::") or "default")
        folder.mkdir()
        argv = [str(binary), *args, *([f"--scheduler={scheduler}"] if scheduler else [])]
        proc = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        raw = json.loads((folder / "wlan.json").read_text())
        assert raw["mac_ap_tx_failed"] > 0 and raw["ap_qdisc_drop_data"] + raw["ap_qdisc_drop_ack"] > 0
        outputs[scheduler] = {k: v for k, v in raw.items() if k != "wall_clock_s"}
    assert all(out == outputs[""] for out in outputs.values())
    bad = subprocess.run([str(binary), "--scheduler=ns3::TcpCubic", "--duration=2", "--warmup=1", "--out=."],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "unknown event scheduler ns3::TcpCubic" in bad.stderr


def test_a_results_folder_with_a_space_gets_the_whole_trial_and_nothing_outside(tmp_path: Path) -> None:
    """ns-3's CommandLine keeps a string only up to its first space: the model runs in its trial's
    folder, so `--out` holds no path (testbed/simulate.py)."""
    out = tmp_path / "my results" / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-1"
    proc = trial(out, "dl2-ul2-fifo")
    assert proc.returncode == 0, proc.stderr
    assert (out / "wlan.json").is_file() and json.loads((out / "summary.json").read_text())["valid"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my results"], "the model wrote outside the results"
    prov = json.loads((out / "provenance.json").read_text())
    assert f"--out={out}" in prov["command"]


FULL_DISK = r"""
import json, pathlib, subprocess, sys, time
root, argv = pathlib.Path(sys.argv[1]), sys.argv[2:]
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(root)], check=True)
out = root / "smoke" / "wlanlong" / "dl2-ul2-fifo" / "trial-1"
proc = subprocess.Popen([*argv, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
log = out.with_name("trial-1.partial") / "trial.log"
while proc.poll() is None and not (log.exists() and "wlan_dcf" in log.read_text()):
    time.sleep(0.05)
subprocess.run(["dd", "if=/dev/zero", f"of={root}/fill", "bs=64k"], capture_output=True)   # until the disk is full
stdout, stderr = proc.communicate(timeout=300)
print(json.dumps({"rc": proc.returncode, "stdout": stdout, "stderr": stderr,
                  "left": sorted(str(p.relative_to(root)) for p in root.rglob("*"))}))
"""


def test_a_model_output_lost_to_a_full_disk_fails_the_trial_and_says_so(tmp_path: Path) -> None:
    """The model does not check its own write: on a full disk it exits 0 with an empty wlan.json.
    The runner names that instead of taking it for a result (sim/build.py read_output). A real
    full disk: a 4 MB tmpfs in a private mount namespace, filled while the model runs."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs unprivileged user and mount namespaces (unshare -rm)")
    papers = tmp_path / "papers"
    papers.mkdir()
    text = (PAPERS / "wlanshort.yaml").read_text().replace("smoke: {duration_s: 12", "smoke: {duration_s: 40")
    (papers / "wlanlong.yaml").write_text(text.replace("paper: wlanshort", "paper: wlanlong"))
    disk = tmp_path / "disk"
    disk.mkdir()
    argv = [sys.executable, "-m", "tcprepro", "trial", "--paper", "wlanlong", "--cell", "dl2-ul2-fifo", "--trial",
            "1", "--profile", "smoke"]
    proc = subprocess.run(["unshare", "-rm", sys.executable, "-c", FULL_DISK, str(disk), *argv], cwd=CHECKOUT,
                          env={**os.environ, "TCPREPRO_PAPER_DIR": str(papers)}, capture_output=True, text=True,
                          timeout=400)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["rc"] == 1, got
    assert "the model exited 0 but wrote 0 bytes of wlan.json" in got["stderr"] and "full disk" in got["stderr"]
    assert not any(p.endswith(("trial-1", "trial-1.partial")) for p in got["left"]), got["left"]


def test_a_second_run_of_a_trial_waits_and_keeps_the_one_the_first_finished(tmp_path: Path) -> None:
    """Two runs of one trial (two checkouts sharing a results folder, say): the second waits for the
    first's lock, then keeps its finished trial; neither deletes the other's folders."""
    out = tmp_path / "smoke" / "wlanshort" / "dl2-ul2-fifo" / "trial-1"
    first = trial(out, "dl2-ul2-fifo", background=True)
    assert isinstance(first, subprocess.Popen)
    deadline = time.monotonic() + 120
    while not (out.with_name("trial-1.partial") / "trial.log").exists():
        assert time.monotonic() < deadline and first.poll() is None, first.communicate()
        time.sleep(0.05)
    second = trial(out, "dl2-ul2-fifo")
    _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err
    assert second.returncode == 0, second.stderr
    assert "another run writes this trial" in second.stderr
    assert "finished by another run while this one waited for it: kept it" in second.stdout
    made = json.loads((out / "provenance.json").read_text())
    assert "model:" in (out / "trial.log").read_text() and made["rng"]["run"] == 1
    assert sorted(p.name for p in out.parent.iterdir()) == [".trial-1.lock", "trial-1"]


def test_a_run_proven_equal_to_a_finished_one_is_taken_from_it_and_equals_its_simulation(tmp_path: Path) -> None:
    """testbed/proven_runs.py: a trial whose smaller-M_t twin (same RNG run) gave up no frame in the
    whole run is that run, not simulated again; simulated anyway, it gives the same output field for
    field. A smaller M_t whose run gave up frames proves nothing: the larger one is simulated."""
    papers = PAPERS
    root = tmp_path / "results" / "wlanmt"
    out = {mt: root / f"dl1-ul1-fifo-mt{mt}" / "trial-1" for mt in (3, 4, 5)}
    for mt in (3, 4, 5):
        proc = trial(out[mt], f"dl1-ul1-fifo-mt{mt}", papers, "wlanmt")
        assert proc.returncode == 0, proc.stderr
    raw = {mt: json.loads((out[mt] / "wlan.json").read_text()) for mt in out}
    prov = {mt: json.loads((out[mt] / "provenance.json").read_text()) for mt in out}
    # M_t = 3 gave frames up (so proves nothing about M_t = 4, which ran); M_t = 4 gave up none
    assert raw[3]["run_final_failed"] > 0 and "derived" not in prov[3] and "derived" not in prov[4]
    assert raw[4]["run_final_failed"] == 0 and raw[4] != {**raw[3], "maxTxAttempts": 4, "ns3_max_ssrc": 4}
    derived = prov[5]["derived"]
    assert derived["from"] == "dl1-ul1-fifo-mt4/trial-1" and derived["rewritten"] == {
        "maxTxAttempts": [4, 5], "ns3_max_ssrc": [4, 5]}
    assert derived["raw_sha256"] == hashlib.sha256((out[4] / "wlan.json").read_bytes()).hexdigest()
    assert raw[5] == {**raw[4], "maxTxAttempts": 5, "ns3_max_ssrc": 5}
    validate(prov[5], "provenance")
    assert json.loads((out[5] / "summary.json").read_text())["valid"]
    assert "--maxTxAttempts=5" in prov[5]["command"] and prov[5]["timing"]["simulator_run_s"] is None
    # the proof checked: M_t = 5 simulated gives what was taken, every field but the run's wall time
    simulated = tmp_path / "simulated" / "wlanmt" / "dl1-ul1-fifo-mt5" / "trial-1"
    env = {**os.environ, "TCPREPRO_PAPER_DIR": str(papers), "TCPREPRO_SIMULATE_ALL": "1"}
    proc = subprocess.run([sys.executable, "-m", "tcprepro", "trial", "--paper", "wlanmt", "--cell",
                           "dl1-ul1-fifo-mt5", "--trial", "1", "--profile", "smoke", "--out", str(simulated)],
                          cwd=CHECKOUT, env=env, text=True, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "derived" not in json.loads((simulated / "provenance.json").read_text())
    ran = json.loads((simulated / "wlan.json").read_text())
    assert {k: v for k, v in ran.items() if k != "wall_clock_s"} == {
        k: v for k, v in raw[5].items() if k != "wall_clock_s"}
