"""Readers for the raw files of a trial directory (docs/trial-format.md).

Each reader returns a pandas DataFrame or a small dataclass and never computes metrics: that is
`analysis.metrics`' job, so a parser can be checked against the raw text alone.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# --------------------------------------------------------------------------------------------
# tcp:tcp_probe (tracefs text)
# --------------------------------------------------------------------------------------------

# The tracepoint's print fmt (stable from 4.16 to 6.18; 6.x appends skbaddr=/skaddr=, ignored).
# %pISpc prints IPv6 as "[addr]:port": the greedy \S+ stops at the last colon, brackets are stripped.
_PROBE_RX = re.compile(
    r"\s(?P<t>\d+\.\d+): tcp_probe: family=\S+ "
    r"src=(?P<src>\S+):(?P<sport>\d+) dest=(?P<dst>\S+):(?P<dport>\d+) "
    r"mark=\S+ data_len=(?P<data_len>\d+) "
    r"snd_nxt=(?:0x)?(?P<snd_nxt>[0-9a-fA-F]+) snd_una=(?:0x)?(?P<snd_una>[0-9a-fA-F]+) "
    r"snd_cwnd=(?P<snd_cwnd>\d+) ssthresh=(?P<ssthresh>\d+) snd_wnd=(?P<snd_wnd>\d+) "
    r"srtt=(?P<srtt_us>\d+) rcv_wnd=(?P<rcv_wnd>\d+)"
)
_LOST_RX = re.compile(r"CPU:\d+ \[LOST (\d+) EVENTS\]")  # no ^: a literal prefix searches fast

PROBE_COLUMNS = [
    "t", "src", "sport", "dst", "dport", "snd_cwnd", "ssthresh", "srtt_us",
    "snd_una", "snd_nxt", "snd_wnd", "rcv_wnd", "data_len",
]
_PROBE_INT = ["sport", "dport", "snd_cwnd", "ssthresh", "srtt_us", "snd_wnd", "rcv_wnd", "data_len"]


@dataclass
class TcpProbeTrace:
    """Parsed tcp_probe lines plus what the ring buffer reported losing.

    `lost_records` > 0 means the buffer overran: cwnd/srtt series have gaps, which a reader of a
    time series must know about even if the trial is otherwise fine.
    """

    frame: pd.DataFrame
    lost_events: int = 0  # number of "CPU:n [LOST k EVENTS]" lines
    lost_records: int = 0  # sum of k over those lines
    unparsed_lines: int = 0  # non-comment lines that are neither tcp_probe nor LOST markers
    partial_last_line: bool = False  # the file did not end with a newline; that line was dropped


def read_tcp_probe(path: Path | str) -> TcpProbeTrace:
    """Parse a tracefs `trace` dump of tcp:tcp_probe (5-10 s per million lines on a 2-CPU VM).

    One C-level `findall` over the whole text, then column-wise numpy conversion: a per-line
    Python loop or `Series.str.extract` was 3x slower. `srtt_us` is microseconds: the kernel
    prints `tp->srtt_us >> 3` (checked against `ss -ti` and iperf3's mean_rtt, tests/data/).
    snd_nxt/snd_una are 32-bit sequence numbers.
    """
    text = Path(path).read_text(errors="replace")
    partial = bool(text) and not text.endswith("\n")
    if partial:
        text = text[: text.rfind("\n") + 1]
    rows = _PROBE_RX.findall(text)
    lost = [int(k) for k in _LOST_RX.findall(text)] if "[LOST " in text else []
    comments = text.count("\n#") + text.startswith("#")
    n_lines = text.count("\n") - comments - text.count("\n\n")
    return TcpProbeTrace(
        frame=_probe_frame(rows),
        lost_events=len(lost),
        lost_records=sum(lost),
        unparsed_lines=n_lines - len(rows) - len(lost),
        partial_last_line=partial,
    )


def _probe_frame(rows: list[tuple[str, ...]]) -> pd.DataFrame:
    """Typed columns in PROBE_COLUMNS order from the regex capture tuples."""
    names = list(_PROBE_RX.groupindex)
    cols = dict(zip(names, zip(*rows, strict=True), strict=True)) if rows else {n: () for n in names}
    n = len(rows)
    out: dict[str, Any] = {"t": np.fromiter(map(float, cols["t"]), dtype=np.float64, count=n)}
    for c in ("src", "dst"):
        addr = pd.Series(cols[c], dtype=object)
        out[c] = (addr.str.strip("[]") if any(a.startswith("[") for a in set(cols[c])) else addr).astype(str)
    for c in _PROBE_INT:
        out[c] = np.fromiter(map(int, cols[c]), dtype=np.int64, count=n)
    for c in ("snd_una", "snd_nxt"):
        out[c] = np.fromiter((int(x, 16) for x in cols[c]), dtype=np.int64, count=n)
    return pd.DataFrame(out)[PROBE_COLUMNS]


# --------------------------------------------------------------------------------------------
# qdisc.csv
# --------------------------------------------------------------------------------------------

QDISC_COLUMNS = [
    "t", "dev", "role", "backlog_bytes", "backlog_pkts", "drops", "sent_bytes", "sent_pkts", "overlimits",
]


def read_qdisc(path: Path | str) -> pd.DataFrame:
    """qdisc.csv sorted by time; counters are cumulative, backlog instantaneous."""
    df = pd.read_csv(path)
    missing = [c for c in QDISC_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    df = df[QDISC_COLUMNS].copy()
    df["t"] = df["t"].astype(float)
    df["dev"] = df["dev"].astype(str)
    df["role"] = df["role"].astype(str)
    for c in QDISC_COLUMNS[3:]:
        df[c] = df[c].astype("int64")
    return df.sort_values("t", kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# voip-<flow>.csv / .json
# --------------------------------------------------------------------------------------------


@dataclass
class VoipLog:
    """Receiver-side packets (one row per distinct seq) and the sender's count of packets sent."""

    packets: pd.DataFrame  # seq, t_send, t_recv, owd_ms
    sent: int
    duplicates: int = 0  # rows dropped because their seq had already been received
    meta: dict[str, Any] = field(default_factory=dict)  # the sender JSON as written


def read_voip(csv_path: Path | str, json_path: Path | str) -> VoipLog:
    """Join a VoIP flow's receiver log with its sender JSON (which must hold `sent`)."""
    df = pd.read_csv(csv_path)
    need = ["seq", "t_send", "t_recv", "owd_ms"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"{csv_path}: missing columns {missing}")
    df = df[need].astype({"seq": "int64", "t_send": float, "t_recv": float, "owd_ms": float})
    n = len(df)
    df = df.drop_duplicates("seq", keep="first").sort_values("seq").reset_index(drop=True)
    meta = json.loads(Path(json_path).read_text())
    if "sent" not in meta:
        raise ValueError(f"{json_path}: no 'sent' field")
    return VoipLog(packets=df, sent=int(meta["sent"]), duplicates=n - len(df), meta=meta)


# --------------------------------------------------------------------------------------------
# iperf3 -J (client side)
# --------------------------------------------------------------------------------------------


@dataclass
class IperfResult:
    """The parts of an iperf3 client JSON the analysis uses.

    `retransmits` is the kernel's count for the sender socket(s) (sum_sent.retransmits); None when
    iperf3 could not read it. `requested_bytes` is `-n` (0 for a timed test).
    """

    bytes_sent: int
    bytes_received: int
    seconds_sent: float
    seconds_received: float
    end_received: float  # receiver-side time from test start to its last byte (s)
    retransmits: int | None
    start_timesecs: float | None  # wall clock (UNIX seconds), not CLOCK_MONOTONIC
    local_ports: list[int]
    remote_port: int | None
    cc: str | None
    requested_bytes: int
    intervals: pd.DataFrame  # start, end, seconds, bytes, bits_per_second, retransmits
    error: str | None = None


def read_iperf(path: Path | str) -> IperfResult:
    """Parse an iperf3 `-J` client output; a run that failed has `error` set and zero totals."""
    d = json.loads(Path(path).read_text())
    start = d.get("start", {})
    end = d.get("end", {})
    sent = end.get("sum_sent", {})
    recv = end.get("sum_received", {})
    conns = start.get("connected", [])
    rows = [iv.get("sum", {}) for iv in d.get("intervals", [])]
    cols = ["start", "end", "seconds", "bytes", "bits_per_second", "retransmits"]
    intervals = pd.DataFrame([{c: r.get(c) for c in cols} for r in rows], columns=cols)
    rtx = sent.get("retransmits")
    return IperfResult(
        bytes_sent=int(sent.get("bytes", 0)),
        bytes_received=int(recv.get("bytes", 0)),
        seconds_sent=float(sent.get("seconds", 0.0)),
        seconds_received=float(recv.get("seconds", 0.0)),
        end_received=float(recv.get("end", 0.0)),
        retransmits=None if rtx is None else int(rtx),
        start_timesecs=start.get("timestamp", {}).get("timesecs"),
        local_ports=[int(c["local_port"]) for c in conns if "local_port" in c],
        remote_port=int(conns[0]["remote_port"]) if conns else None,
        cc=end.get("sender_tcp_congestion"),
        requested_bytes=int(start.get("test_start", {}).get("bytes", 0)),
        intervals=intervals,
        error=d.get("error"),
    )


# --------------------------------------------------------------------------------------------
# tcptrace -l -n
# --------------------------------------------------------------------------------------------


@dataclass
class TcptraceDirection:
    """One direction of a tcptrace connection (the a->b or b->a column)."""

    total_packets: int
    unique_bytes: int  # "unique bytes sent": payload bytes excluding retransmissions
    data_pkts: int  # "actual data pkts" (includes retransmissions)
    data_bytes: int  # "actual data bytes"
    rexmt_pkts: int
    rexmt_bytes: int
    throughput_Bps: float  # tcptrace's unique_bytes / elapsed


@dataclass
class TcptraceConnection:
    """One `TCP connection N:` block; `a` is the side that sent the first packet seen."""

    index: int
    a_host: str
    a_port: int
    b_host: str
    b_port: int
    complete: str  # "yes", "no", "RESET ..." as tcptrace prints it
    elapsed_s: float
    a2b: TcptraceDirection
    b2a: TcptraceDirection


_DIR_FIELDS = {
    "total packets": "total_packets",
    "unique bytes sent": "unique_bytes",
    "actual data pkts": "data_pkts",
    "actual data bytes": "data_bytes",
    "rexmt data pkts": "rexmt_pkts",
    "rexmt data bytes": "rexmt_bytes",
    "throughput": "throughput_Bps",
}
# Both columns of a long-output line repeat the label: "  label:  v1   label:  v2".
_PAIR_RE = re.compile(r"^\s*(?P<label>[A-Za-z][^:]*?):\s*(?P<v1>.*?)\s+(?P=label):\s*(?P<v2>.*?)\s*$")
_HOST_RE = re.compile(r"^\s*host (\S+):\s+(\S+)\s*$")


def read_tcptrace(path: Path | str) -> list[TcptraceConnection]:
    """Parse `tcptrace -l -n` long output into one record per TCP connection."""
    text = Path(path).read_text(errors="replace")
    blocks = re.split(r"^TCP connection (\d+):\s*$", text, flags=re.M)
    return [_parse_conn(int(blocks[i]), blocks[i + 1]) for i in range(1, len(blocks) - 1, 2)]


def _parse_conn(index: int, block: str) -> TcptraceConnection:
    hosts: list[tuple[str, int]] = []
    head: dict[str, str] = {}
    cols: tuple[dict[str, float], dict[str, float]] = ({}, {})
    for line in block.splitlines():
        if line.startswith("====="):
            break
        hm = _HOST_RE.match(line)
        if hm:
            addr, _, port = hm.group(2).rpartition(":")
            hosts.append((addr.strip("[]"), int(port)))
            continue
        pm = _PAIR_RE.match(line)
        if pm and pm.group("label") in _DIR_FIELDS:
            key = _DIR_FIELDS[pm.group("label")]
            for side, raw in enumerate((pm.group("v1"), pm.group("v2"))):
                cols[side][key] = _number(raw)
            continue
        if ":" in line and line.startswith("\t"):
            k, _, v = line.strip().partition(":")
            head[k.strip()] = v.strip()
    if len(hosts) != 2:
        raise ValueError(f"tcptrace connection {index}: expected two hosts, got {hosts}")
    return TcptraceConnection(
        index=index,
        a_host=hosts[0][0], a_port=hosts[0][1], b_host=hosts[1][0], b_port=hosts[1][1],
        complete=head.get("complete conn", ""),
        elapsed_s=_hms(head.get("elapsed time", "0:00:00")),
        a2b=_direction(cols[0], index),
        b2a=_direction(cols[1], index),
    )


def _direction(values: dict[str, float], index: int) -> TcptraceDirection:
    missing = [k for k in _DIR_FIELDS.values() if k not in values]
    if missing:
        raise ValueError(f"tcptrace connection {index}: missing {missing}")
    kw: dict[str, Any] = {k: int(v) for k, v in values.items() if k != "throughput_Bps"}
    return TcptraceDirection(throughput_Bps=float(values["throughput_Bps"]), **kw)


def _number(raw: str) -> float:
    """Leading number of a tcptrace value ("1201444 Bps", "3.067 secs"); NA -> nan."""
    m = re.match(r"-?\d+(?:\.\d+)?", raw.strip())
    return float(m.group(0)) if m else float("nan")


def _hms(raw: str) -> float:
    """'0:00:03.067307' -> 3.067307 seconds."""
    secs = 0.0
    for part in raw.split()[0].split(":"):
        secs = secs * 60 + float(part)
    return secs


# ------------------------------------------------------------------------------------------
# iperf2 -y C (fixed-size flows)


@dataclass
class Iperf2Report:
    """The final line of an iperf2 CSV report: bytes moved and over how long, and the local port."""

    bytes: int
    seconds: float
    local_port: int | None


def read_iperf2_csv(path: Path | str) -> Iperf2Report | None:
    """iperf2 `-y C` columns: time, src, sport, dst, dport, id, interval ("0.0-4.1"), bytes, bit/s.
    The last full line is the whole transfer. None if the file holds no report."""
    rows = [line.split(",") for line in Path(path).read_text().splitlines() if line.count(",") >= 8]
    if not rows:
        return None
    last = rows[-1]
    start, _, end = last[6].partition("-")
    return Iperf2Report(int(last[7]), float(end) - float(start), int(last[2]) if last[2].isdigit() else None)


# ------------------------------------------------------------------------------------------
# ACKs of one connection, from a sender-side pcap


def first_syn_times(pcap: Path | str) -> dict[int, float]:
    """{destination port: CLOCK_REALTIME seconds} of the first SYN (without ACK) to each port:
    when each connection of a capture was opened."""

    out = subprocess.run(["tcpdump", "-r", str(pcap), "-tt", "-nn",
                          "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn"], capture_output=True, text=True).stdout
    first: dict[int, float] = {}
    for t, port in re.findall(r"^(\d+\.\d+) IP \S+ > \S+\.(\d+): Flags \[S\]", out, flags=re.M):
        first.setdefault(int(port), float(t))
    return first


def read_acks(pcap: Path | str, receiver_ip: str, port: int) -> pd.DataFrame:
    """t (CLOCK_REALTIME seconds) and relative ack number of every segment the receiver sent on
    `port`, as tcpdump decodes them (relative to the sender's initial sequence number). SYN
    segments are left out: tcpdump prints their numbers absolute."""

    out = subprocess.run(["tcpdump", "-r", str(pcap), "-tt", "-nn", f"src host {receiver_ip} and src port {port}"],
                         capture_output=True, text=True).stdout
    rows = re.findall(r"^(\d+\.\d+) .*?Flags \[([^\]]*)\].*?\back (\d+),", out, flags=re.M)
    rows = [(t, ack) for t, flags, ack in rows if "S" not in flags]
    return pd.DataFrame({"t": [float(a) for a, _ in rows], "ack": [int(b) for _, b in rows]})
