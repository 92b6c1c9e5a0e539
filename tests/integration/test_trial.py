"""Real trials on the host kernel: fidelity, isolation of concurrent trials, and clean teardown."""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.conftest import trial_cmd

pytestmark = pytest.mark.root

# tests/data/papers/hostnet.yaml: 1 or 2 Mbit/s, 30000-byte drop-tail, no added delay, 8 s,
# one CUBIC flow plus the VoIP-like flow. No netem needed, so the host kernel runs it.
QUEUE_BYTES = 30000


def run_trial(host_env, out: Path, cell: str = "r1000", **kw) -> subprocess.CompletedProcess:
    return subprocess.run(trial_cmd("hostnet", cell, out, **kw), env=host_env, capture_output=True,
                          text=True, timeout=180)


def load(out: Path, name: str) -> dict:
    return json.loads((out / name).read_text())


def test_host_trial_meets_its_fidelity_checks(tmp_path, host_env, nothing_left_behind):
    out = tmp_path / "hostnet" / "r1000" / "trial-1"
    proc = run_trial(host_env, out)
    assert proc.returncode == 0, proc.stderr
    assert "kernel " in proc.stdout and "set-up" in proc.stdout and "tear-down" in proc.stdout
    summary, prov = load(out, "summary.json"), load(out, "provenance.json")
    assert summary["valid"], summary["invalid_reasons"]
    checks = {c["name"]: c for c in prov["fidelity"]}
    assert checks["forward.queue_limit"]["measured"] == QUEUE_BYTES
    assert checks["forward.shaper_burst"]["measured"] == 1500 + 625     # a packet + 5 ms at 1 Mbit/s
    cpu = prov["cpu_during_traffic"]                                    # the kernel's CPU while traffic ran
    assert 0 < cpu["busy"] <= 1 and cpu["cpus"] >= 1 and cpu["processes_cpu_s"]["monitor-qdisc"] > 0
    assert prov["neighbours"] == 8 and prov["offloads"]["rt"] == {       # 4 hosts: each, and the router
        "rt-eth0": "tso gso gro off, gso_max_segs 1", "rt-eth1": "tso gso gro off, gso_max_segs 1"}
    assert abs(checks["forward.rate_at_saturation"]["measured"] - 1000) <= 20
    assert checks["base_rtt"]["measured"] <= 0.5
    assert checks["queued_packet_size"]["measured"] <= 1500
    m = summary["metrics"]
    # The buffer (queued + in transmission) never exceeds its size, so VoIP waits at most size/rate.
    assert m["q_forward_backlog_bytes_max"] <= QUEUE_BYTES - 1500
    assert m["owd_max_ms"] <= QUEUE_BYTES * 8 / 1000 + 0.5
    assert m["owd_median_ms"] > 100, "a CUBIC flow keeps a drop-tail queue mostly full"
    # Goodput near the link rate less headers (1448/1500 of 1 Mbit/s), VoIP's share aside.
    assert 850 <= m["goodput_kbit_s"] <= 970
    assert m["q_forward_drops"] > 0 and m["rexmt_data_pkts"] > 0
    # The tcp:tcp_probe trace is this trial's own: every event's dport is in its port block.
    ports = {int(line.split("dest=")[1].split()[0].rsplit(":", 1)[1])
             for line in (out / "tcp_probe.trace").read_text().splitlines() if "tcp_probe:" in line}
    assert ports and all(prov["port_base"] <= p < prov["port_base"] + 100 for p in ports)
    assert prov["kernel"]["where"] == "host"
    assert summary["timing"]["setup_s"] < 10 and summary["timing"]["teardown_s"] < 10
    assert not out.with_name("trial-1.partial").exists()


def test_concurrent_trials_do_not_see_each_other(tmp_path, host_env, nothing_left_behind):
    outs = {cell: tmp_path / "hostnet" / cell / "trial-1" for cell in ("r1000", "r2000")}
    procs = {cell: subprocess.Popen(trial_cmd("hostnet", cell, out), env=host_env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for cell, out in outs.items()}
    for proc in procs.values():
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    bases = set()
    for cell, out in outs.items():
        summary, prov = load(out, "summary.json"), load(out, "provenance.json")
        assert summary["valid"], summary["invalid_reasons"]
        # Each trial measured its own bottleneck (1000 vs 2000 kbit/s), not its neighbour's.
        rate = {c["name"]: c for c in prov["fidelity"]}["forward.rate_at_saturation"]["measured"]
        assert abs(rate - int(cell[1:])) <= 0.02 * int(cell[1:]), (cell, rate)
        bases.add(prov["port_base"])
        ports = {int(line.split("dest=")[1].split()[0].rsplit(":", 1)[1])
                 for line in (out / "tcp_probe.trace").read_text().splitlines() if "tcp_probe:" in line}
        assert all(prov["port_base"] <= p < prov["port_base"] + 100 for p in ports)
    assert len(bases) == 2, "the two trials must hold different port slots"


def _wait_for_traffic(out: Path, timeout: float = 60) -> None:
    qdisc = out.with_name(out.name + ".partial") / "qdisc.csv"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if qdisc.exists() and qdisc.stat().st_size > 5000:
            return
        time.sleep(0.2)
    raise AssertionError("the trial never started its traffic")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_midway_leaves_nothing(tmp_path, host_env, nothing_left_behind, sig):
    out = tmp_path / "hostnet" / "r1000" / "trial-1"
    proc = subprocess.Popen(trial_cmd("hostnet", "r1000", out), env=host_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    _wait_for_traffic(out)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not out.exists() and not out.with_name("trial-1.partial").exists()


def wait_for_set_up(out: Path, timeout: float = 60) -> None:
    """Until the trial has built its namespaces and links and not yet shaped them."""
    log = out.with_name(out.name + ".partial") / "trial.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and "built network" in log.read_text():
            return
        time.sleep(0.05)
    raise AssertionError("the trial never built its network")


@pytest.mark.parametrize("when", ["set-up", "traffic"])
def test_sigkill_is_swept(tmp_path, host_env, nothing_left_behind, when):
    """kill -9 runs no handler, while namespaces, veths and qdiscs are being made or while traffic
    runs: processes die by their parent-death signal, namespaces with their last process, and the
    sweep removes the tracefs instance and the partial directory."""
    results = tmp_path / "results"
    out = results / "smoke" / "hostnet" / "r1000" / "trial-1"
    proc = subprocess.Popen(trial_cmd("hostnet", "r1000", out), env=host_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_for_set_up(out) if when == "set-up" else _wait_for_traffic(out)
    proc.kill()
    proc.wait()
    started = "started receivers" in out.with_name("trial-1.partial").joinpath("trial.log").read_text()
    assert started == (when == "traffic")
    time.sleep(2)   # parent-death signals and shell hang-ups take effect
    from testbed.cleanup import sweep
    removed = sweep(results=results, quiet=True)
    assert any("partial trial" in r for r in removed)
    assert not out.exists() and not out.with_name("trial-1.partial").exists()


def test_bad_config_is_rejected_before_anything_starts(tmp_path, paper_env, nothing_left_behind):
    bad = tmp_path / "papers"
    bad.mkdir()
    text = (Path(paper_env["TCPREPRO_PAPER_DIR"]) / "hostnet.yaml").read_text()
    (bad / "hostnet.yaml").write_text(text.replace("limit_bytes: 30000", "limit_bytes: -5", 1))
    out = tmp_path / "out" / "trial-1"
    proc = subprocess.run(trial_cmd("hostnet", "r1000", out), env={**paper_env, "TCPREPRO_PAPER_DIR": str(bad)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "scenario.bottleneck.forward.limit_bytes" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_cell_is_named(tmp_path, paper_env):
    proc = run_trial(paper_env, tmp_path / "x" / "trial-1", cell="r999")
    assert proc.returncode == 2 and "no cell 'r999'" in proc.stderr and "r1000" in proc.stderr


def test_missing_kernel_feature_fails_loudly(tmp_path, paper_env, nothing_left_behind):
    """Forced onto a host kernel without netem, a delay cell must refuse to run, naming netem."""
    import os

    from testbed.host_probes import probe_kernel
    if {c.name: c for c in probe_kernel()}["qdisc:netem"].ok:
        pytest.skip("this kernel has netem")
    out = tmp_path / "vmsmoke" / "cubic-rtt50-f1" / "trial-1"
    proc = subprocess.run(trial_cmd("vmsmoke", "cubic-rtt50-f1", out),
                          env={**paper_env, **os.environ, "TCPREPRO_KERNEL": "host",
                               "TCPREPRO_PAPER_DIR": paper_env["TCPREPRO_PAPER_DIR"]},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "qdisc:netem" in proc.stderr and "Fix" in proc.stderr
    assert not out.exists()


def test_fixed_size_staggered_flows_with_their_own_congestion_control(tmp_path, host_env, nothing_left_behind):
    out = tmp_path / "hostflows" / "two-flows" / "trial-1"
    proc = subprocess.run(trial_cmd("hostflows", "two-flows", out), env=host_env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr
    summary, prov = load(out, "summary.json"), load(out, "provenance.json")
    assert summary["valid"], summary["invalid_reasons"]
    flows = {f["id"]: f for f in summary["flows"]}
    # 1 MB of payload is 1e6 * 1500/1448 IP bytes: 4.14 s at 2 Mbit/s, the floor; sharing the link
    # after t=3 s can only stretch it, and the transfer completes before the trial ends.
    assert 4.1 <= flows["bulk0"]["completion_time_s"] <= 9.0
    # The fixed-size flow (iperf2, whose server reads to EOF) delivered every byte.
    assert flows["bulk0"]["bytes_received"] == 1_000_000
    # Each flow ran the congestion control its config names, as the kernel reports its socket's
    # (ss -i); the timed flow ran the configured generator, iperf2.
    check = next(c for c in prov["fidelity"] if c["name"] == "socket_congestion_control")
    assert check["pass"] and "bulk1=reno" in check["measured"], check
    assert prov["bulk_generator"] == "iperf2" and (out / "iperf2-bulk1-client.csv").exists()
    # The second flow's first ACK comes no earlier than its configured start, 3 s after t0.
    t0 = prov["t0_monotonic"]
    port1 = prov["port_base"] + 2
    first = min(float(line.split(": tcp_probe:")[0].split()[-1]) for line in
                (out / "tcp_probe.trace").read_text().splitlines() if f":{port1} " in line)
    assert 2.95 <= first - t0 <= 4.0
