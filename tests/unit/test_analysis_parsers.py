"""analysis.parsers on hand-made text and on real fixtures captured on kernel 6.18 (tests/data/)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analysis.parsers import (
    PROBE_COLUMNS,
    read_iperf,
    read_qdisc,
    read_tcp_probe,
    read_tcptrace,
    read_voip,
)

DATA = Path(__file__).resolve().parents[1] / "data"

PROBE_V4 = (
    "  iperf3-1234    [001] ..s1.  12345.678901: tcp_probe: family=AF_INET src=10.0.1.1:40000 "
    "dest=10.0.2.1:20001 mark=0x0 data_len=1448 snd_nxt=0x1a2b snd_una=0x1a00 snd_cwnd=10 "
    "ssthresh=2147483647 snd_wnd=64240 srtt=50123 rcv_wnd=65160 sock_cookie=1f "
    "skbaddr=000000006ecc1d89 skaddr=00000000492d3e21"
)
# Task names may contain spaces; IPv6 endpoints come in brackets; 5.x kernels end at sock_cookie.
PROBE_V6 = (
    "Web Content-77 [000] .....  12345.700000: tcp_probe: family=AF_INET6 src=[fd00::1]:40002 "
    "dest=[fd00::2]:20002 mark=0x0 data_len=0 snd_nxt=0xffffffff snd_una=0x0 snd_cwnd=3 "
    "ssthresh=7 snd_wnd=1000 srtt=99 rcv_wnd=2000 sock_cookie=20"
)


def test_tcp_probe_hand_made(tmp_path: Path) -> None:
    text = "\n".join([
        "# tracer: nop",
        "#",
        PROBE_V4,
        "CPU:1 [LOST 12 EVENTS]",
        PROBE_V6,
        "  <idle>-0  [001] d.h1.  12345.800000: sched_switch: prev_comm=x",
        "CPU:0 [LOST 3 EVENTS]",
        PROBE_V4[:120],  # partial last line: the writer was cut off mid-line
    ])
    f = tmp_path / "tcp_probe.trace"
    f.write_text(text)
    tr = read_tcp_probe(f)
    df = tr.frame
    assert list(df.columns) == PROBE_COLUMNS
    assert len(df) == 2
    assert (tr.lost_events, tr.lost_records, tr.unparsed_lines, tr.partial_last_line) == (2, 15, 1, True)
    r = df.iloc[0]
    assert r["t"] == pytest.approx(12345.678901)
    assert (r["src"], r["sport"], r["dst"], r["dport"]) == ("10.0.1.1", 40000, "10.0.2.1", 20001)
    assert (r["snd_nxt"], r["snd_una"]) == (0x1A2B, 0x1A00)
    assert (r["snd_cwnd"], r["ssthresh"], r["srtt_us"], r["snd_wnd"], r["rcv_wnd"], r["data_len"]) == (
        10, 2147483647, 50123, 64240, 65160, 1448)
    r6 = df.iloc[1]
    assert (r6["src"], r6["sport"], r6["dst"], r6["dport"]) == ("fd00::1", 40002, "fd00::2", 20002)
    assert (r6["snd_nxt"], r6["snd_una"]) == (0xFFFFFFFF, 0)


def test_tcp_probe_empty(tmp_path: Path) -> None:
    f = tmp_path / "t.trace"
    f.write_text("# tracer: nop\n#\n")
    tr = read_tcp_probe(f)
    assert tr.frame.empty and list(tr.frame.columns) == PROBE_COLUMNS
    assert (tr.lost_events, tr.unparsed_lines, tr.partial_last_line) == (0, 0, False)


def test_tcp_probe_real_kernel_lines() -> None:
    tr = read_tcp_probe(DATA / "tcp_probe_real.trace")
    df = tr.frame
    assert len(df) == 400 and tr.unparsed_lines == 0 and tr.lost_events == 0
    # iperf3's control connection (40120) and data connection (40124) share the server port.
    assert df.groupby("sport").size().to_dict() == {40120: 6, 40124: 394}
    assert set(df["dport"]) == {20001}
    assert df["t"].is_monotonic_increasing
    first = df.iloc[0]
    assert first["t"] == pytest.approx(425.900439)
    assert (first["snd_nxt"], first["snd_una"]) == (0x4A548C9A, 0x4A548C75)


def test_tcp_probe_srtt_is_microseconds() -> None:
    """Steady-state srtt from the trace must agree with `ss -ti` rtt (ms) taken during the run."""
    df = read_tcp_probe(DATA / "tcp_probe_real.trace").frame
    data = df[(df["sport"] == 40124) & (df["t"] > df["t"].min() + 0.4)]
    ss_rtt_ms = [float(x) for x in re.findall(r"cubic .*?rtt:([\d.]+)/", (DATA / "ss_real.txt").read_text())]
    assert len(ss_rtt_ms) >= 3
    median_ms = data["srtt_us"].median() / 1000
    assert min(ss_rtt_ms) <= median_ms <= max(ss_rtt_ms)
    mean_rtt_us = json.loads((DATA / "iperf_real.json").read_text())["end"]["streams"][0]["sender"]["mean_rtt"]
    assert data["srtt_us"].median() == pytest.approx(mean_rtt_us, rel=0.15)


def test_read_qdisc(tmp_path: Path) -> None:
    f = tmp_path / "qdisc.csv"
    f.write_text(
        "t,dev,role,backlog_bytes,backlog_pkts,drops,sent_bytes,sent_pkts,overlimits\n"
        "2.0,r-eth1,forward,100,1,0,2000,2,5\n"
        "1.0,r-eth1,forward,0,0,0,1000,1,0\n"
    )
    df = read_qdisc(f)
    assert df["t"].tolist() == [1.0, 2.0]
    assert df["sent_bytes"].tolist() == [1000, 2000]
    assert str(df["drops"].dtype) == "int64"
    bad = tmp_path / "bad.csv"
    bad.write_text("t,dev,role\n1,a,forward\n")
    with pytest.raises(ValueError, match="missing columns"):
        read_qdisc(bad)


def test_read_qdisc_real() -> None:
    df = read_qdisc(DATA / "qdisc_real.csv")
    assert len(df) == 550
    assert df["drops"].iloc[-1] == 6
    assert set(df["role"]) == {"forward"}


def test_read_voip(tmp_path: Path) -> None:
    c, j = tmp_path / "voip-v.csv", tmp_path / "voip-v.json"
    c.write_text("seq,t_send,t_recv,owd_ms\n2,1.04,1.07,30.0\n0,1.00,1.025,25.0\n2,1.04,1.08,40.0\n")
    j.write_text(json.dumps({"sent": 5, "packet_bytes": 186, "interval_ms": 20}))
    v = read_voip(c, j)
    assert v.sent == 5 and v.duplicates == 1
    assert v.packets["seq"].tolist() == [0, 2]
    assert v.packets["owd_ms"].tolist() == [25.0, 30.0]  # the first copy of seq 2 is kept
    assert v.meta["interval_ms"] == 20
    j.write_text("{}")
    with pytest.raises(ValueError, match="sent"):
        read_voip(c, j)


def test_read_iperf_real() -> None:
    r = read_iperf(DATA / "iperf_real.json")
    assert (r.bytes_sent, r.bytes_received, r.retransmits) == (4895688, 4813152, 6)
    assert r.seconds_sent == pytest.approx(4.000103)
    assert r.end_received == pytest.approx(4.039969)
    assert (r.local_ports, r.remote_port, r.cc, r.requested_bytes) == ([40124], 20001, "cubic", 0)
    assert r.start_timesecs == 1795292607
    assert len(r.intervals) == 4
    assert r.intervals["bytes"].sum() == r.bytes_sent
    assert r.intervals["retransmits"].tolist() == [3, 1, 1, 1]
    assert r.error is None


def test_read_iperf_error(tmp_path: Path) -> None:
    f = tmp_path / "iperf.json"
    f.write_text(json.dumps({"start": {"connected": []}, "intervals": [], "end": {},
                             "error": "unable to connect to server: Connection refused"}))
    r = read_iperf(f)
    assert r.error and r.bytes_received == 0 and r.retransmits is None and r.intervals.empty


def test_read_tcptrace_real() -> None:
    conns = read_tcptrace(DATA / "tcptrace_real.txt")
    assert [c.index for c in conns] == [1, 2]
    ctl, data = conns
    assert (ctl.a_host, ctl.a_port, ctl.b_host, ctl.b_port) == ("10.200.1.1", 40120, "10.200.2.1", 20001)
    assert ctl.complete == "yes"
    assert (data.a_port, data.b_port) == (40124, 20001)
    assert data.complete.startswith("RESET")
    assert data.elapsed_s == pytest.approx(4.083901)
    a = data.a2b
    assert (a.total_packets, a.unique_bytes, a.data_pkts, a.data_bytes) == (3366, 4860973, 3364, 4869661)
    assert (a.rexmt_pkts, a.rexmt_bytes, a.throughput_Bps) == (6, 8688, 1190277.0)
    assert (data.b2a.total_packets, data.b2a.unique_bytes, data.b2a.data_pkts) == (2008, 0, 0)
    # tcptrace's throughput is unique bytes over the connection's lifetime
    assert a.unique_bytes / data.elapsed_s == pytest.approx(a.throughput_Bps, abs=1)


def test_read_tcptrace_no_connections(tmp_path: Path) -> None:
    f = tmp_path / "t.txt"
    f.write_text("0 packets seen, 0 TCP packets traced\n")
    assert read_tcptrace(f) == []
