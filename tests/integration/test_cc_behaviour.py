"""Each congestion control by name through a real emulated bottleneck on this kernel (BPF for
H-TCP, Westwood+ and the LEDBAT family here), and behaviour checks that fail when the algorithm
is wrong: LEDBAT holds the queue near TARGET, yields to CUBIC, the MD variants drain the queue,
H-TCP's growth after a loss follows alpha(Delta)."""
from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cc import loader, registry
from tests.integration.conftest import trial_cmd
from tests.integration.series import acked_kbit_s, congestion_events, drains, probe, queue_delay_ms, usable

pytestmark = pytest.mark.root
RATE_KBIT = 10000          # the host test papers' bottleneck
MSS = 1448
BPF_NAMES = [n for n, e in registry.registry().items() if "bpf" in e]


def run(host_env, paper: str, cell: str, out: Path) -> tuple[dict, dict]:
    proc = subprocess.run(trial_cmd(paper, cell, out), env=host_env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert usable(summary), summary["invalid_reasons"]
    return summary, json.loads((out / "provenance.json").read_text())


@pytest.mark.parametrize("name", BPF_NAMES)
def test_each_bpf_name_registers_carries_a_transfer_and_is_unloaded(name, tmp_path, host_env,
                                                                    nothing_left_behind):
    if registry.how_available(name)[0] != "bpf":
        pytest.skip(f"{name} is served by {registry.how_available(name)[0]} on this kernel, not BPF")
    out = tmp_path / "ccnames" / name / "trial-1"
    summary, prov = run(host_env, "ccnames", name, out)
    cc = prov["congestion_controls"][name]
    kernel_name = registry.registry()[name]["bpf"]["kernel_name"]
    assert cc["impl"] == "bpf" and cc["kernel_name"] == kernel_name
    assert len(cc["object_sha256"]) == 64 and cc["source"].startswith("cc/bpf/")
    # The socket really ran it: the kernel reports the congestion control its socket had (ss -i).
    check = next(c for c in prov["fidelity"] if c["name"] == "socket_congestion_control")
    assert check["pass"] and check["measured"] == f"bulk0={kernel_name}", check
    assert summary["metrics"]["goodput_kbit_s"] > 0.6 * RATE_KBIT
    assert kernel_name not in loader.available(), "unloaded when the trial ended"
    assert loader.loaded_by_us(kernel_name) is None


def test_ledbat_alone_keeps_the_queue_near_target_and_fills_the_link(tmp_path, host_env, nothing_left_behind):
    out = tmp_path / "ledbatq" / "ledbat" / "trial-1"
    summary, prov = run(host_env, "ledbatq", "ledbat", out)
    delay = queue_delay_ms(out, prov, 10, 30)     # after the linear ramp-up
    p10, p50, p90 = np.percentile(delay, [10, 50, 90])
    print(f"LEDBAT alone: queueing delay p10 {p10:.1f} median {p50:.1f} p90 {p90:.1f} ms; "
          f"goodput {summary['metrics']['goodput_kbit_s']:.0f} kbit/s")
    # TARGET is 25 ms; ms timestamps, delayed ACKs and the 10 ms sampling blur it by a few ms.
    assert 18 <= p50 <= 32, f"median queueing delay {p50:.1f} ms is not near TARGET 25 ms"
    assert p90 <= 45, "the queue (72 ms when full) must not be kept full"
    assert acked_kbit_s(probe(out, prov), 10, 29) > 0.9 * RATE_KBIT * MSS / 1500


def test_ledbat_yields_to_a_cubic_flow_that_joins(tmp_path, host_env, nothing_left_behind):
    out = tmp_path / "ledbatyield" / "ledbat-cubic" / "trial-1"
    _, prov = run(host_env, "ledbatyield", "ledbat-cubic", out)
    ledbat, cubic = probe(out, prov, 0), probe(out, prov, 1)
    before = acked_kbit_s(ledbat, 3, 9.5)
    led, cub = acked_kbit_s(ledbat, 20, 29), acked_kbit_s(cubic, 20, 29)
    print(f"LEDBAT alone {before:.0f} kbit/s; after CUBIC joined: LEDBAT {led:.0f}, CUBIC {cub:.0f} kbit/s")
    assert before > 0.8 * RATE_KBIT
    assert cub > 0.8 * (led + cub), "CUBIC ends with most of the link"


def test_mdvar_drains_the_queue_periodically(tmp_path, host_env, nothing_left_behind):
    """MDvar's beta = 1 - TARGET/RTT drains the queue whatever the base delay (none here, so the
    window it falls to, MIN_CWND packets, is all in the queue); linear LEDBAT keeps ~20 packets.
    The window is read from every tcp_probe event; the queue, sampled every 10 ms, is asked to fall
    to within one packet of it: at MIN_CWND the RTT is ~2.4 ms and the window grows by a packet per
    RTT, so the trough itself is mostly shorter than a sampling interval (seen in 4-13 of the
    seconds whose window hit MIN_CWND), the next RTT's queue seldom is."""
    out = tmp_path / "ledbatq" / "ledbat-mdvar" / "trial-1"
    summary, prov = run(host_env, "ledbatq", "ledbat-mdvar", out)
    min_cwnd = prov["congestion_controls"]["ledbat-mdvar"]["params"]["min_cwnd"]
    w = probe(out, prov)
    w = w[(w.t >= 5) & (w.t <= 30)]
    at_min = int((w.t[w.snd_cwnd <= min_cwnd] // 1).nunique())
    print(f"ledbat-mdvar: window at MIN_CWND ({min_cwnd}) in {at_min} of 25 s")
    assert at_min >= 5
    assert drains(out, prov, "ledbat-mdvar", summary, floor_pkts=min_cwnd + 1) >= 5


def htcp_alpha(delta_s: np.ndarray, delta_l: float = 1.0) -> np.ndarray:
    """draft-leith-tcp-htcp-06: 1 for Delta <= Delta_L, then 1 + 10(D - D_L) + ((D - D_L)/2)^2."""
    d = np.maximum(delta_s - delta_l, 0.0)
    return np.where(delta_s <= delta_l, 1.0, 1 + 10 * d + (d / 2) ** 2)


def test_bpf_htcp_growth_after_a_loss_follows_alpha(tmp_path, host_env, nothing_left_behind):
    """Between losses, cwnd grows by alpha(Delta) per RTT: integrate alpha(Delta(t))/srtt(t) from
    the end of recovery to the next loss and compare with the growth the trace shows (RTT scaling
    off: the path has no base delay)."""
    out = tmp_path / "htcpalpha" / "bpf-htcp" / "trial-1"
    _, prov = run(host_env, "htcpalpha", "bpf-htcp", out)
    assert next(iter(prov["congestion_controls"].values()))["impl"] == "bpf"
    df = probe(out, prov)
    t, cwnd, srtt = df.t.to_numpy(), df.snd_cwnd.to_numpy(), df.srtt_us.to_numpy() / 1e6
    events = congestion_events(t, cwnd)
    ratios, spans = [], []
    for a, b in itertools.pairwise(events):
        if t[b] - t[a] < 2.5 or t[a] < 2:
            continue                                   # a short epoch never leaves Reno mode
        low = a + int(np.argmin(cwnd[a:b]))            # recovery over: growth starts here
        w = slice(low, b - 1)
        rate = htcp_alpha(t[w] - t[a]) / srtt[w]       # packets per second, alpha from the event
        predicted = float(np.sum(rate[:-1] * np.diff(t[w])))
        ratios.append((cwnd[b - 1] - cwnd[low]) / predicted)
        spans.append((round(float(t[a]), 1), round(float(t[b]), 1)))
    print(f"H-TCP epochs {spans}: measured/predicted growth {np.round(ratios, 2).tolist()}")
    assert len(ratios) >= 2, f"too few long congestion epochs: {spans}"
    assert 0.8 <= float(np.median(ratios)) <= 1.25
