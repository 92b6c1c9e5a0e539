"""analysis.metrics against values computed by hand (and the real fixtures in tests/data/)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.metrics import (
    goodput_from_tcptrace,
    iperf_goodput_kbit_s,
    loss_fraction,
    owd_stats,
    probe_for_flow,
    probe_stats,
    queue_full_events,
    queue_stats,
    saturation_rate_kbit,
)
from analysis.parsers import (
    TcptraceConnection,
    TcptraceDirection,
    VoipLog,
    read_iperf,
    read_qdisc,
    read_tcp_probe,
    read_tcptrace,
)

DATA = Path(__file__).resolve().parents[1] / "data"


def qdf(t: list[float], backlog: list[int] | None = None, drops: list[int] | None = None,
        sent: list[int] | None = None, role: str = "forward", dev: str = "r-eth1") -> pd.DataFrame:
    """A qdisc frame with the given columns; the rest zero."""
    n = len(t)
    backlog = backlog or [0] * n
    return pd.DataFrame({
        "t": t, "dev": dev, "role": role, "backlog_bytes": backlog,
        "backlog_pkts": [b // 100 for b in backlog], "drops": drops or [0] * n,
        "sent_bytes": sent or [0] * n, "sent_pkts": [0] * n, "overlimits": [0] * n,
    })


# ---- VoIP ----------------------------------------------------------------------------------

def test_owd_stats_by_hand() -> None:
    s = owd_stats(pd.Series([30.0, 10.0, 50.0, 20.0, 40.0]))
    assert s["median"] == 30.0 and s["mean"] == 30.0
    assert s["std"] == pytest.approx(math.sqrt(250.0))  # ddof=1: (400+100+0+100+400)/4
    assert s["p5"] == pytest.approx(12.0)  # linear: 10 + 0.05*4*(20-10)
    assert s["p95"] == pytest.approx(48.0)
    assert (s["min"], s["max"], s["count"]) == (10.0, 50.0, 5)


def test_owd_stats_degenerate() -> None:
    assert owd_stats([])["count"] == 0 and owd_stats([])["median"] is None
    one = owd_stats([7.0])
    assert one["median"] == 7.0 and one["std"] is None


def test_loss_fraction() -> None:
    pk = pd.DataFrame({"seq": [0, 1, 2, 4, 5, 7, 8], "t_send": 0.0, "t_recv": 0.0, "owd_ms": 1.0})
    assert loss_fraction(VoipLog(packets=pk, sent=10)) == pytest.approx(0.3)
    assert loss_fraction(VoipLog(packets=pk.iloc[:0], sent=0)) is None


# ---- qdisc ---------------------------------------------------------------------------------

def test_saturation_rate_pools_saturated_runs() -> None:
    # runs of backlog > 0: samples 1-3 (2 intervals, 250 B in 2 s) and 5-6 (125 B in 1 s);
    # intervals touching an empty sample (0-1, 3-4, 4-5) do not count.
    q = qdf(t=[0, 1, 2, 3, 4, 5, 6], backlog=[0, 5, 5, 5, 0, 5, 5], sent=[0, 100, 225, 350, 400, 500, 625])
    assert saturation_rate_kbit(q, "forward") == pytest.approx(375 * 8 / 3 / 1000)
    assert saturation_rate_kbit(q, "forward", min_saturated_s=3.5) is None
    assert saturation_rate_kbit(q, "reverse") is None


def test_saturation_rate_given_the_nominal_rate_skips_intervals_the_queue_could_empty_in() -> None:
    """At 8 kbit/s (1000 B/s), 1-s intervals count only from a backlog of >= 1000 B: the interval
    from 300 B (sent 300, then the link idled) would read as a slow link."""
    q = qdf(t=[0, 1, 2, 3, 4, 5, 6], backlog=[3000, 2000, 1500, 300, 1500, 1500, 1500],
            sent=[0, 1000, 2000, 3000, 3300, 4300, 5300])
    assert saturation_rate_kbit(q, "forward", min_saturated_s=1.0) == pytest.approx(5300 * 8 / 6 / 1000)
    assert saturation_rate_kbit(q, "forward", min_saturated_s=1.0, rate_kbit=8) == pytest.approx(8.0)


def test_saturation_rate_given_the_nominal_rate_skips_brief_backlogs() -> None:
    """A backlog that lasts two intervals carries the shaper's burst saved while idle: at 8 kbit/s
    it sends 1200 B in its first second. Only runs of three or more intervals count."""
    q = qdf(t=[0, 1, 2, 3, 4, 5, 6, 7, 8], backlog=[0, 1500, 1500, 0, 1500, 1500, 1500, 1500, 0],
            sent=[0, 0, 1200, 2200, 2200, 3400, 4400, 5400, 6400])
    assert saturation_rate_kbit(q, "forward", min_saturated_s=1.0) == pytest.approx((1200 + 3200) * 8 / 4 / 1000)
    assert saturation_rate_kbit(q, "forward", min_saturated_s=1.0, rate_kbit=8) == pytest.approx(3200 * 8 / 3 / 1000)


def test_saturation_rate_bar_does_not_depend_on_the_intervals_own_length() -> None:
    """Sample stamps jitter: the link sends 1000 B every 1 s, but intervals are stamped 0.8 or 1.2 s
    long alternately. With the start backlog at 1000 B, a per-interval bar (rate x own dt) would
    admit only the short-stamped intervals and read 25 % fast; the median bar admits both."""
    t = [0.0]
    for i in range(10):
        t.append(t[-1] + (0.8 if i % 2 == 0 else 1.2))
    q = qdf(t=t, backlog=[1000] * 11, sent=[1000 * i for i in range(11)])
    assert saturation_rate_kbit(q, "forward", min_saturated_s=1.0, rate_kbit=8) == pytest.approx(8.0)


def test_saturation_rate_skips_counter_reset_and_single_samples() -> None:
    q = qdf(t=[0, 1, 2, 3, 4], backlog=[5, 5, 5, 0, 5], sent=[1000, 1500, 100, 200, 300])
    # 0-1: +500 in 1 s counts; 1-2 counter went backwards: skipped; sample 4 is a run of one.
    assert saturation_rate_kbit(q, "forward", min_saturated_s=1.0) == pytest.approx(4.0)


def test_saturation_rate_real_htb_10mbit() -> None:
    """The real fixture's bottleneck was htb rate 10 Mbit/s (L2 bytes)."""
    q = read_qdisc(DATA / "qdisc_real.csv")
    assert saturation_rate_kbit(q, "forward") == pytest.approx(10_000, rel=0.02)


def test_queue_stats() -> None:
    q = qdf(t=[0, 1, 2, 3], backlog=[0, 100, 300, 200], drops=[5, 5, 7, 10])
    s = queue_stats(q, "forward")
    assert s["backlog_bytes_mean"] == 150.0 and s["backlog_bytes_max"] == 300
    assert s["backlog_pkts_mean"] == 1.5 and s["backlog_pkts_max"] == 3
    assert s["drops"] == 5  # counted within the samples, not the counter's absolute value
    assert queue_stats(q, "forward", t_from=2)["drops"] == 3


def test_queue_full_episode_spanning_samples_counts_once() -> None:
    q = qdf(t=[0, 1, 2, 3, 4], drops=[0, 1, 2, 3, 3])
    assert queue_full_events(q, "forward").count == 1


def test_queue_full_episodes_separated_by_quiet_sample_count_twice() -> None:
    q = qdf(t=[0, 1, 2, 3], drops=[0, 1, 1, 2])
    assert queue_full_events(q, "forward").count == 2


def test_queue_full_events_rate_and_window() -> None:
    # increments per interval: 0,1,2,1,0,0,2,0,1 -> runs {1,2,1}, {2}, {1} = 3 events in 9 s
    q = qdf(t=list(range(10)), drops=[0, 0, 1, 3, 4, 4, 4, 6, 6, 7])
    ev = queue_full_events(q, "forward")
    assert (ev.count, ev.window_s, ev.per_minute) == (3, 9.0, pytest.approx(20.0))
    # window [4, 8]: intervals 4-5, 5-6, 6-7 (+2), 7-8 -> one event in 4 s
    w = queue_full_events(q, "forward", t_from=4, t_to=8)
    assert (w.count, w.window_s, w.per_minute) == (1, 4.0, pytest.approx(15.0))
    assert queue_full_events(q.iloc[:1], "forward").per_minute is None


def test_queue_full_events_real() -> None:
    q = read_qdisc(DATA / "qdisc_real.csv")
    assert queue_full_events(q, "forward").count == 6
    assert queue_stats(q, "forward")["drops"] == 6


def test_role_with_two_devices_is_an_error() -> None:
    q = pd.concat([qdf(t=[0, 1]), qdf(t=[0, 1], dev="other")])
    with pytest.raises(ValueError, match="several devices"):
        queue_stats(q, "forward")


# ---- TCP -----------------------------------------------------------------------------------

def test_goodput_from_tcptrace_real() -> None:
    conns = read_tcptrace(DATA / "tcptrace_real.txt")
    assert len(goodput_from_tcptrace(conns, server_ports=[20001])) == 2  # control + data
    (g,) = goodput_from_tcptrace(conns, server_ports=[20001], client_ports=[40124])
    assert g.sender == "10.200.1.1:40124" and g.receiver == "10.200.2.1:20001"
    assert g.goodput_kbit_s == pytest.approx(4860973 * 8 / 4.083901 / 1000)
    assert g.goodput_kbyte_s == pytest.approx(1190.277, abs=0.001)  # tcptrace: 1190277 Bps
    assert (g.rexmt_pkts, g.rexmt_bytes, g.data_pkts) == (6, 8688, 3364)
    assert goodput_from_tcptrace(conns, server_ports=[5201]) == []


def test_goodput_data_direction_b_to_a() -> None:
    """A connection whose first-seen side is the receiver (capture started mid-flow)."""
    idle = TcptraceDirection(10, 0, 0, 0, 0, 0, 0.0)
    busy = TcptraceDirection(1000, 2_000_000, 1400, 2_010_000, 7, 10_000, 100_000.0)
    c = TcptraceConnection(1, "10.0.2.1", 20001, "10.0.1.1", 40000, "no", 20.0, idle, busy)
    (g,) = goodput_from_tcptrace([c])
    assert g.sender == "10.0.1.1:40000" and g.unique_bytes == 2_000_000
    assert g.goodput_kbit_s == pytest.approx(800.0) and g.goodput_kbyte_s == pytest.approx(100.0)
    assert g.rexmt_pkts == 7


def _iperf_json(tmp_path: Path, requested: int, received: int, end: float, error: str | None = None) -> Path:
    d = {"start": {"connected": [{"local_port": 40000, "remote_port": 20001}],
                   "test_start": {"bytes": requested}, "timestamp": {"timesecs": 1}},
         "intervals": [],
         "end": {"sum_sent": {"bytes": requested, "seconds": end - 0.1, "end": end - 0.1, "retransmits": 2},
                 "sum_received": {"bytes": received, "seconds": end, "end": end}}}
    if error:
        d["error"] = error
    f = tmp_path / "iperf.json"
    f.write_text(json.dumps(d))
    return f



def test_iperf_goodput(tmp_path: Path) -> None:
    assert iperf_goodput_kbit_s(read_iperf(_iperf_json(tmp_path, 1000, 1000, 8.0))) == pytest.approx(1.0)


def test_probe_flow_stats() -> None:
    probe = read_tcp_probe(DATA / "tcp_probe_real.trace").frame
    assert len(probe_for_flow(probe, 20001)) == 400
    data = probe_for_flow(probe, 20001, [40124])
    assert len(data) == 394
    s = probe_stats(data)
    assert s["cwnd_max"] == data["snd_cwnd"].max() == 42
    assert s["srtt_median_ms"] == pytest.approx(data["srtt_us"].median() / 1000)
    assert probe_stats(data.iloc[:0])["cwnd_mean"] is None


def test_completion_time_is_the_first_ack_covering_the_last_byte():
    """Relative acks: the SYN takes one, so byte N is covered by ack N + 1."""
    import pandas as pd

    from analysis.metrics import completion_time_from_acks
    acks = pd.DataFrame({"t": [10.0, 10.5, 11.0, 11.25, 12.0], "ack": [1, 401, 1000, 1001, 1001]})
    assert completion_time_from_acks(acks, 1000, t_start=10.0) == 1.25
    assert completion_time_from_acks(acks, 2000, t_start=10.0) is None
    assert completion_time_from_acks(acks.iloc[0:0], 10, t_start=0.0) is None
