"""VoIP-like constant-rate UDP with one-way delay (the Collateral Damage paper's probe flow).

The paper sends 186-byte IP packets every 20 ms. Sender and receiver run in network namespaces of
one kernel, so they share CLOCK_MONOTONIC: the sender stamps each packet with it and the receiver
converts the kernel's receive stamp to it (see `_recv_monotonic`).

    python -m traffic.voip send --dst IP --port P --packet-bytes 186 --interval-ms 20 \
        --duration S --out voip-x.json [--start-at MONOTONIC_T | --start-at stdin]
    python -m traffic.voip recv --bind IP --port P --out voip-x.csv [--duration S]
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import struct
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

from testbed.timed_loop import StopFlag, realtime

IP_UDP_HEADERS = 28  # IPv4 (20, no options) + UDP (8): packet_bytes is the IP datagram size
MAGIC = b"TRV1"
STAMP = struct.Struct("!4sIq")  # magic, seq, send time (CLOCK_MONOTONIC ns)
LATE_S = 0.001
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Python 3.11 does not export it
FLUSH_EVERY_S = 1.0
CSV_HEADER = "seq,t_send,t_recv,owd_ms\n"




# --------------------------------------------------------------------------------------------
# Sender
# --------------------------------------------------------------------------------------------


@dataclass
class SendReport:
    """voip-<flow>.json: the first six keys are the trial-format contract, the rest diagnostics."""

    sent: int
    first_send: float | None
    last_send: float | None
    packet_bytes: int
    interval_ms: float
    late_sends: int
    max_late_ms: float
    send_errors: int
    schedule_start: float
    requested_start: float | None
    dst: str
    port: int


def _sleep_until(t: float, stop: StopFlag) -> None:
    while not stop.requested:
        delay = t - time.monotonic()
        if delay <= 0:
            return
        time.sleep(min(delay, 0.1))


def send(dst: str, port: int, packet_bytes: int, interval_ms: float, duration: float,
         start_at: float | None, stop: StopFlag) -> SendReport:
    """Send on the absolute grid start + i*interval, stamping each packet when it leaves.

    The stamp is the actual send instant, not the slot, so sender lateness never shows up as
    network delay; lateness is reported separately (late_sends, max_late_ms).
    """
    payload_len = packet_bytes - IP_UDP_HEADERS
    if payload_len < STAMP.size:
        raise ValueError(f"--packet-bytes must be >= {IP_UDP_HEADERS + STAMP.size}")
    pad = bytes(payload_len - STAMP.size)
    interval = interval_ms / 1000.0
    count = math.floor(duration / interval + 1e-9)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect((dst, port))
        start = max(start_at, time.monotonic()) if start_at is not None else time.monotonic()
        rep = SendReport(0, None, None, packet_bytes, interval_ms, 0, 0.0, 0, start, start_at, dst, port)
        for seq in range(count):
            slot = start + seq * interval
            _sleep_until(slot, stop)
            if stop.requested:
                break
            _send_one(sock, seq, slot, pad, rep)
    return rep


def _send_one(sock: socket.socket, seq: int, slot: float, pad: bytes, rep: SendReport) -> None:
    now_ns = time.monotonic_ns()
    try:
        sock.send(STAMP.pack(MAGIC, seq, now_ns) + pad)
    except OSError:
        rep.send_errors += 1  # e.g. ENOBUFS; the packet counts as sent and lost
    t = now_ns / 1e9
    late = t - slot
    rep.late_sends += late > LATE_S
    rep.max_late_ms = max(rep.max_late_ms, late * 1000)
    rep.sent += 1
    rep.first_send = t if rep.first_send is None else rep.first_send
    rep.last_send = t


# --------------------------------------------------------------------------------------------
# Receiver
# --------------------------------------------------------------------------------------------


def _realtime_minus_monotonic_ns() -> int:
    """CLOCK_REALTIME - CLOCK_MONOTONIC now, read back to back (error ~100 ns)."""
    m0 = time.monotonic_ns()
    r = time.clock_gettime_ns(time.CLOCK_REALTIME)
    m1 = time.monotonic_ns()
    return r - (m0 + m1) // 2


def _recv_monotonic(ancdata: list[tuple[int, int, bytes]]) -> int | None:
    """The kernel receive stamp (SO_TIMESTAMPNS, CLOCK_REALTIME) moved to CLOCK_MONOTONIC ns.

    The offset between the clocks is read right after recvmsg returns, so an NTP step or slew
    only matters if it lands in the microseconds between the packet's arrival and that read.
    """
    for level, ctype, data in ancdata:
        if level == socket.SOL_SOCKET and ctype == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("@qq", data[:16])
            return sec * 1_000_000_000 + nsec - _realtime_minus_monotonic_ns()
    return None


@dataclass
class RecvStats:
    received: int = 0
    foreign: int = 0  # datagrams without our stamp
    no_kernel_stamp: int = 0  # fell back to the user-space receive time
    ip_sizes: tuple[int, ...] = ()


def _open_receiver(bind: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.bind((bind, port))
    sock.settimeout(0.1)
    return sock


def receive(sock: socket.socket, out: TextIO, duration: float | None, stop: StopFlag) -> RecvStats:
    """Write one CSV row per stamped datagram until stopped or `duration` has passed."""
    st = RecvStats()
    sizes: set[int] = set()
    end = time.monotonic() + duration if duration is not None else math.inf
    last_flush = time.monotonic()
    while not stop.requested and time.monotonic() < end:
        try:
            data, anc, _, _ = sock.recvmsg(65535, socket.CMSG_SPACE(16))
        except TimeoutError:
            continue
        now = time.monotonic()
        if len(data) < STAMP.size or data[:4] != MAGIC:
            st.foreign += 1
            continue
        _, seq, t_send_ns = STAMP.unpack_from(data)
        t_recv_ns = _recv_monotonic(anc)
        if t_recv_ns is None:
            st.no_kernel_stamp += 1
            t_recv_ns = time.monotonic_ns()
        owd_ms = (t_recv_ns - t_send_ns) / 1e6
        out.write(f"{seq},{t_send_ns / 1e9:.9f},{t_recv_ns / 1e9:.9f},{owd_ms:.3f}\n")
        st.received += 1
        sizes.add(len(data) + IP_UDP_HEADERS)
        if now - last_flush >= FLUSH_EVERY_S:
            out.flush()
            last_flush = now
    st.ip_sizes = tuple(sorted(sizes))
    return st


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m traffic.voip", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send", help="constant-rate stamped UDP")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--packet-bytes", type=int, default=186, help="IP datagram size (payload + 28)")
    s.add_argument("--interval-ms", type=float, default=20.0)
    s.add_argument("--duration", type=float, required=True, help="seconds of sending")
    s.add_argument("--out", type=Path, required=True, help="JSON report")
    s.add_argument("--start-at", help="CLOCK_MONOTONIC time of the first packet, or 'stdin': print "
                   "'ready' once started and read the time from standard input (a process starts in "
                   "seconds under QEMU TCG; this way the trial need not guess how many)")
    s.add_argument("--rt-priority", type=int, default=10, help="SCHED_FIFO priority, 0 = normal scheduling")
    r = sub.add_parser("recv", help="log one-way delay of stamped UDP")
    r.add_argument("--bind", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--out", type=Path, required=True, help="CSV log (exists once the socket is bound)")
    r.add_argument("--duration", type=float, help="stop after this many seconds")
    return ap


def _main_send(a: argparse.Namespace) -> int:
    stop = StopFlag()
    start_at = _start_time(a.start_at)
    with realtime(a.rt_priority) as policy:
        rep = send(a.dst, a.port, a.packet_bytes, a.interval_ms, a.duration, start_at, stop)
    a.out.write_text(json.dumps({**asdict(rep), "sched": policy}, indent=1) + "\n")
    return 0


def _start_time(arg: str | None) -> float | None:
    if arg != "stdin":
        return float(arg) if arg is not None else None
    print("ready", flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        raise ValueError("--start-at stdin: standard input closed before a start time arrived")
    return float(line)


def _main_recv(a: argparse.Namespace) -> int:
    stop = StopFlag()
    with _open_receiver(a.bind, a.port) as sock, a.out.open("w") as out:
        out.write(CSV_HEADER)
        out.flush()
        st = receive(sock, out, a.duration, stop)
    print(
        f"voip recv: {st.received} packets, IP sizes {list(st.ip_sizes)}, "
        f"{st.foreign} foreign, {st.no_kernel_stamp} without kernel stamp",
        file=sys.stderr,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    try:
        return _main_send(a) if a.cmd == "send" else _main_recv(a)
    except (OSError, ValueError) as e:
        print(f"voip {a.cmd}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
