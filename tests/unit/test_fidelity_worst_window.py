"""testbed.fidelity.worst_window_rate_check slices the sorted samples once per window: it must find
the same slowest stretch as windowing the whole trace per window, and still catch a stalled link."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis.metrics import saturation_rate_kbit
from analysis.parsers import read_qdisc
from testbed.fidelity import VIRTUAL_TIME, WINDOW_S, worst_window_rate_check
from testbed.shaping import DirectionSpec

HEADER = "t,dev,role,backlog_bytes,backlog_pkts,drops,sent_bytes,sent_pkts,overlimits\n"
SPEC = DirectionSpec(rate_kbit=10000, delay_ms=20, loss_pct=0, limit_bytes=None, limit_packets=60)


def backlogged_link(path: Path, seconds: float, slow: tuple[float, float] = (0, 0), jitter_ms: float = 2) -> Path:
    """A 10-Mbit/s bottleneck sampled every ~10 ms with a standing 30-packet queue, draining at
    half the rate during `slow`; reverse-direction samples interleaved as the sampler writes them."""
    rng = np.random.default_rng(7)
    t, sent, rows = 0.0, 0.0, []
    while t < seconds:
        rows.append(f"{t:.6f},rt-eth1,forward,45000,30,0,{int(sent)},{int(sent // 1500)},0\n")
        rows.append(f"{t:.6f},rt-eth0,reverse,0,0,0,0,0,0\n")
        dt = 0.010 + rng.uniform(-jitter_ms, jitter_ms) / 1000
        rate = SPEC.rate_kbit * (0.5 if slow[0] <= t < slow[1] else 1.0)
        sent += rate * 1000 / 8 * dt
        t += dt
    path.write_text(HEADER + "".join(rows))
    return path


def per_window_worst(qdisc_csv: Path) -> float:
    """The computation the check replaced: the whole trace windowed for every 0.5-s stretch."""
    q = read_qdisc(qdisc_csv)
    fwd = q[q["role"] == "forward"]
    t, t_to, rates = float(fwd["t"].min()), float(fwd["t"].max()), []
    t_from = t
    while t + WINDOW_S <= t_to:
        r = saturation_rate_kbit(q, "forward", min_saturated_s=WINDOW_S * 0.9, t_from=t, t_to=t + WINDOW_S,
                                 rate_kbit=SPEC.rate_kbit)
        if r is not None:
            rates.append((r, t - t_from))
        t += WINDOW_S / 2
    return round(min(rates)[0], 1)


def test_the_same_worst_stretch_as_windowing_the_whole_trace(tmp_path: Path) -> None:
    path = backlogged_link(tmp_path / "q.csv", 30, slow=(12.3, 13.1))
    got = worst_window_rate_check(path, SPEC)
    assert got["measured"] == per_window_worst(path)
    # the one window wholly inside the slow stretch (windows start every 0.25 s)
    assert got["pass"] is False and abs(got["measured"] - 5000) < 100, got
    assert "starts at t=12.5 s;" in got["note"], got["note"]


def test_a_steady_link_passes(tmp_path: Path) -> None:
    path = backlogged_link(tmp_path / "q.csv", 20)
    got = worst_window_rate_check(path, SPEC)
    assert got["pass"] is True and got["measured"] == per_window_worst(path)


def gapped_link(path: Path, short_bytes: int) -> Path:
    """UML's exact 10-ms samples of a 10-Mbit/s bottleneck, backlogged but for an empty queue at
    10.00-10.02 s, that sends `short_bytes` less than its rate in the interval after 10.40 s."""
    rows, sent = [], 0
    for i in range(2000):
        t = i / 100
        backlog = 0 if 1000 <= i < 1003 else 45000
        rows.append(f"{t:.6f},rt-eth1,forward,{backlog},{backlog // 1500},0,{sent},{sent // 1500},0\n")
        sent += 12500 - (short_bytes if i == 1040 else 0)
    path.write_text(HEADER + "".join(rows))
    return path


def test_a_window_backlogged_for_part_of_its_time_is_held_to_two_packets_of_that_time(tmp_path: Path) -> None:
    """On the virtual-time lane a window may fall two packets short of what the time its queue was
    backlogged carries at the rate. The window from 10.0 s was backlogged 0.47 s: two packets short
    read 9948.9 kbit/s there, which a bar of two packets per 0.5 s (9952) rejected."""
    uml = VIRTUAL_TIME
    two = gapped_link(tmp_path / "two.csv", 2 * 1500)
    there = saturation_rate_kbit(read_qdisc(two), "forward", min_saturated_s=0.45, t_from=10.0, t_to=10.5,
                                 rate_kbit=SPEC.rate_kbit)
    assert there is not None and round(there, 1) == 9948.9 < SPEC.rate_kbit * (1 - uml.window_rate_tolerance(10000))
    assert worst_window_rate_check(two, SPEC, tol=uml)["pass"] is True
    three = worst_window_rate_check(gapped_link(tmp_path / "three.csv", 3 * 1500), SPEC, tol=uml)
    assert three["pass"] is False and three["measured"] == 9923.4, three
    assert "starts at t=10.0 s;" in three["note"], three
    assert three["tolerance"] == round(uml.window_rate_tolerance(10000, 0.47), 4), three
