"""In the Debian-kernel VM, where H-TCP and Westwood+ exist as modules: the same scenario with the
module and with this repo's BPF object (10 Mbit/s, 50 ms RTT, 100-packet drop-tail, 25 s), and
Westwood+'s ssthresh after a loss against BWE x RTTmin."""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from analysis.parsers import read_tcp_probe
from tests.integration.conftest import trial_cmd
from tests.integration.series import drains
from tests.integration.test_vm_trial import vm_results  # noqa: F401  (the VM fixture)

pytestmark = [pytest.mark.root, pytest.mark.vm]
RATE_BPS, RTT_S, MSS = 10e6, 0.050, 1448


def run_in_vm(paper_env, vm_results, cell):  # noqa: F811
    out = vm_results / "vmcc" / cell / "trial-1"
    env = {**paper_env, "TCPREPRO_KERNEL": "vm"}
    proc = subprocess.run(trial_cmd("vmcc", cell, out), env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    prov = json.loads((out / "provenance.json").read_text())
    assert summary["valid"], summary["invalid_reasons"]
    df = read_tcp_probe(out / "tcp_probe.trace").frame
    df = df[df.dport == prov["port_base"] + 1].copy()
    df["t"] -= prov["t0_monotonic"]
    return summary, prov, df


def loss_ssthresholds(df) -> np.ndarray:
    """ssthresh right after each congestion event (after slow start's first exit)."""
    s = df.ssthresh.to_numpy()
    changed = np.flatnonzero(np.diff(s) != 0) + 1
    return s[changed][(s[changed] < 2**31 - 1) & (df.t.to_numpy()[changed] > 3)]


def shape(df) -> dict[str, float]:
    w = df[df.t > 5]
    return {"cwnd_mean": float(w.snd_cwnd.mean()), "cwnd_std": float(w.snd_cwnd.std()),
            "losses": len(loss_ssthresholds(df))}


@pytest.mark.parametrize("cc", ["htcp", "westwood"])
def test_bpf_and_module_agree_in_the_vm(cc, vm_results, paper_env, nothing_left_behind):  # noqa: F811
    results, traces = {}, {}
    for impl in ("module", "bpf"):
        summary, prov, df = run_in_vm(paper_env, vm_results, f"{cc}-{impl}")
        traces[impl] = df
        used = prov["congestion_controls"][f"{cc}@{impl}"]
        assert used["impl"] == impl and prov["kernel"]["where"] == "vm"
        if impl == "module":
            assert used["object_sha256"] and used["kernel_name"] == cc
        results[impl] = {"goodput_kbit_s": summary["metrics"]["goodput_kbit_s"], **shape(df)}
    print(f"{cc} in the VM: {json.dumps(results)}")
    m, b = results["module"], results["bpf"]
    assert abs(b["goodput_kbit_s"] - m["goodput_kbit_s"]) <= 0.05 * m["goodput_kbit_s"]
    assert abs(b["cwnd_mean"] - m["cwnd_mean"]) <= 0.25 * m["cwnd_mean"]
    if cc == "westwood":
        bdp = RATE_BPS * (MSS / 1500) / 8 * RTT_S / MSS      # BWE x RTTmin in packets (payload rate)
        thresholds = loss_ssthresholds(traces["bpf"])
        print(f"Westwood+ BPF ssthresh after losses {thresholds.tolist()} vs BWE*RTTmin {bdp:.1f}")
        assert len(thresholds) and 0.7 * bdp <= float(np.median(thresholds)) <= 1.3 * bdp


@pytest.mark.parametrize("name", ["ledbat-md-nf2", "ledbat-md-nf1"])
def test_fixed_beta_md_drains_the_queue_at_40ms(name, vm_results, paper_env, nothing_left_behind):  # noqa: F811
    """At the paper's 40 ms base RTT, beta = 0.6 leaves cwnd*beta below the path's BDP plus a
    few packets, so each decrease empties the queue (with no base delay it cannot: see ledbatq)."""
    out = vm_results / "vmledbat" / name / "trial-1"
    env = {**paper_env, "TCPREPRO_KERNEL": "vm"}
    proc = subprocess.run(trial_cmd("vmledbat", name, out), env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    prov = json.loads((out / "provenance.json").read_text())
    assert summary["valid"], summary["invalid_reasons"]
    assert prov["congestion_controls"][name]["impl"] == "bpf"
    assert drains(out, prov, name, summary) >= 3
