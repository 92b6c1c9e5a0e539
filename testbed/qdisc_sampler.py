"""Bottleneck queue sampler: qdisc backlog, drops and sent counters every few ms, as CSV.

Runs in the network namespace it is started in (the router's). One netlink socket, one
RTM_GETQDISC request per device per sample: forking `tc` 100 times a second would both miss
slots and load the CPU that the emulation needs. Rows follow docs/trial-format.md (qdisc.csv).

    python -m testbed.qdisc_sampler --out qdisc.csv --interval 0.01 \
        --dev rt-eth1:forward:2: --dev rt-eth0:reverse:2:
"""

from __future__ import annotations

import argparse
import math
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from testbed.timed_loop import StopFlag, realtime

# The request and the reply have fixed layouts (linux/netlink.h, linux/rtnetlink.h, linux/gen_stats.h),
# decoded here with struct: pyroute2's generic decoder costs ~3 ms a call under QEMU TCG, which at
# 100 Hz x 2 queues took over half a guest CPU away from the emulated link.
# No pyroute2 import either: it alone took seconds of a trial's start-up under TCG.
NLM_F_REQUEST, NLM_F_ECHO, NLMSG_ERROR = 0x1, 0x8, 0x2
RTM_NEWQDISC, RTM_GETQDISC = 36, 38
NLMSGHDR = struct.Struct("=IHHII")      # len, type, flags, seq, pid
TCMSG = struct.Struct("=BxxxiIII")      # family, ifindex, handle, parent, info
RTATTR = struct.Struct("=HH")           # len, type
TCA_STATS2, TCA_STATS_BASIC, TCA_STATS_QUEUE = 7, 1, 3
GNET_BASIC = struct.Struct("=QI")       # bytes, packets
GNET_QUEUE = struct.Struct("=IIIII")    # qlen, backlog, drops, requeues, overlimits
HEADER = "t,dev,role,backlog_bytes,backlog_pkts,drops,sent_bytes,sent_pkts,overlimits\n"
FLUSH_EVERY_S = 1.0
REPLY_TIMEOUT_S = 5


class SamplerError(RuntimeError):
    """A device or qdisc the caller named is not there; the message says which."""


@dataclass(frozen=True)
class Target:
    """One qdisc to sample: device, role label, and the handle as a 32-bit tc id."""

    dev: str
    role: str
    handle: int
    handle_text: str
    ifindex: int = 0


def parse_handle(text: str) -> int:
    """tc notation (hex): '2:' -> 0x20000, '1:10' -> 0x10010."""
    major, sep, minor = text.partition(":")
    if not sep or not major:
        raise ValueError(f"bad qdisc handle {text!r}: expected MAJOR: (hex), e.g. 2:")
    return (int(major, 16) << 16) | int(minor or "0", 16)


def parse_target(spec: str) -> Target:
    """DEV:ROLE:HANDLE, the handle keeping its own colon (rt-eth1:forward:2:)."""
    dev, role, handle = [*spec.split(":", 2), "", ""][:3]
    if not dev or not role or not handle:
        raise argparse.ArgumentTypeError(f"--dev {spec!r}: expected DEV:ROLE:HANDLE, e.g. rt-eth1:forward:2:")
    try:
        return Target(dev, role, parse_handle(handle), handle)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


class QdiscReader:
    """Reads one qdisc's stats by handle with a non-dump RTM_GETQDISC.

    NLM_F_ECHO is what makes the kernel answer a non-dump get to the requester: without it the
    reply goes only to RTNLGRP_TC listeners (and 6.x kernels skip it when nobody listens).
    """

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self._sock.bind((0, 0))
        # A reply takes microseconds; seconds happen only in a starved QEMU TCG guest. The kernel's
        # receive timeout, not Python's: a socket timeout polls before every send and receive and
        # reads the clock around it, seven more syscalls a sample, each a host round trip on the
        # virtual-time lane.
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", REPLY_TIMEOUT_S, 0))
        self._seq = 0

    def close(self) -> None:
        self._sock.close()

    def resolve(self, target: Target) -> Target:
        """Bind a target to its ifindex and check that its qdisc answers."""
        try:
            ifindex = socket.if_nametoindex(target.dev)
        except OSError as e:
            raise SamplerError(f"no device {target.dev!r} in this network namespace") from e
        bound = Target(target.dev, target.role, target.handle, target.handle_text, ifindex)
        self.stats(bound)
        return bound

    def stats(self, target: Target) -> tuple[int, int, int, int, int, int]:
        """backlog_bytes, backlog_pkts, drops, sent_bytes, sent_pkts, overlimits."""
        return self.stats_many([target])[0]

    def stats_many(self, targets: list[Target]) -> list[tuple[int, int, int, int, int, int]]:
        """stats() of every target, asked in one send: the kernel answers the requests of one
        message in turn, so a sample costs one send and one receive per target (each syscall is
        tens of microseconds of host time on the virtual-time lane)."""
        first = self._seq + 1
        self._seq += len(targets)
        self._sock.send(b"".join(self._request(t, first + i) for i, t in enumerate(targets)))
        rows: dict[int, tuple[int, int, int, int, int, int]] = {}
        while len(rows) < len(targets):
            try:
                data = self._sock.recv(65536)
            except BlockingIOError:         # SO_RCVTIMEO passed
                raise SamplerError(f"no netlink reply for {targets[len(rows)].dev} within {REPLY_TIMEOUT_S} s "
                                   f"(is the machine overloaded? run fewer trials at once)") from None
            _, mtype, _, seq, _ = struct.unpack_from("=IHHII", data)
            if not first <= seq <= self._seq:
                continue
            target = targets[seq - first]
            if mtype == NLMSG_ERROR:
                (err,) = struct.unpack_from("=i", data, 16)
                raise SamplerError(self._explain(target, -err))
            if mtype != RTM_NEWQDISC:
                raise SamplerError(f"unexpected netlink reply type {mtype} for {target.dev}")
            rows[seq] = _decode(data)
        return [rows[first + i] for i in range(len(targets))]

    @staticmethod
    def _request(target: Target, seq: int) -> bytes:
        size = NLMSGHDR.size + TCMSG.size
        return (NLMSGHDR.pack(size, RTM_GETQDISC, NLM_F_REQUEST | NLM_F_ECHO, seq, 0)
                + TCMSG.pack(0, target.ifindex, target.handle, 0, 0))

    @staticmethod
    def _explain(target: Target, errno_: int) -> str:
        if errno_ in (2, 22):  # ENOENT: no such handle; EINVAL: handle mismatch
            return (
                f"no qdisc with handle {target.handle_text} on {target.dev} "
                f"(see `tc qdisc show dev {target.dev}` in this namespace)"
            )
        if errno_ == 19:  # ENODEV
            return f"device {target.dev} disappeared"
        return f"RTM_GETQDISC for {target.dev} {target.handle_text} failed: errno {errno_}"


def _attrs(data: bytes, start: int, end: int) -> dict[int, tuple[int, int]]:
    """{type: (payload offset, payload end)} of the rtattrs in data[start:end]."""
    out = {}
    while start + RTATTR.size <= end:
        length, kind = RTATTR.unpack_from(data, start)
        if length < RTATTR.size:
            break
        out[kind & 0x3FFF] = (start + RTATTR.size, start + length)   # strip NLA_F_NESTED and friends
        start += (length + 3) & ~3
    return out


def _decode(data: bytes) -> tuple[int, int, int, int, int, int]:
    """backlog_bytes, backlog_pkts, drops, sent_bytes, sent_pkts, overlimits of an RTM_NEWQDISC reply."""
    length = NLMSGHDR.unpack_from(data, 0)[0]
    top = _attrs(data, NLMSGHDR.size + TCMSG.size, min(length, len(data)))
    if TCA_STATS2 not in top:
        raise SamplerError("the kernel's qdisc reply has no TCA_STATS2")
    nested = _attrs(data, *top[TCA_STATS2])
    if TCA_STATS_BASIC not in nested or TCA_STATS_QUEUE not in nested:
        raise SamplerError("the kernel's qdisc reply has no TCA_STATS2 basic/queue stats")
    sent_bytes, sent_pkts = GNET_BASIC.unpack_from(data, nested[TCA_STATS_BASIC][0])
    qlen, backlog, drops, _requeues, overlimits = GNET_QUEUE.unpack_from(data, nested[TCA_STATS_QUEUE][0])
    return backlog, qlen, drops, sent_bytes, sent_pkts, overlimits


@dataclass
class Schedule:
    """An absolute grid start + k*interval: lateness never accumulates into drift.

    A sample taken more than half an interval after its slot is late; when a stall spans whole
    slots, those are skipped (counted), not caught up with a burst.
    """

    start: float
    interval: float
    k: int = 0
    samples: int = 0
    late: int = 0
    skipped: int = 0
    last_t: float = 0.0

    def wait(self) -> float:
        """Sleep until the next slot; returns the slot time."""
        slot = self.start + self.k * self.interval
        delay = slot - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        return slot

    def taken(self, slot: float, t: float, now: float) -> None:
        """Account for a sample taken at t for `slot` (finished at `now`), and move to the next
        future slot."""
        self.samples += 1
        self.last_t = t
        if t - slot > self.interval / 2:
            self.late += 1
        nxt = max(self.k + 1, math.ceil((now - self.start) / self.interval))
        self.skipped += nxt - self.k - 1
        self.k = nxt

    def summary(self) -> str:
        mean = (self.last_t - self.start) / (self.samples - 1) if self.samples > 1 else float("nan")
        return (
            f"qdisc_sampler: {self.samples} samples, mean interval {mean * 1000:.3f} ms "
            f"(target {self.interval * 1000:.3f}), {self.late} late (> {self.interval * 500:.1f} ms), "
            f"{self.skipped} slots skipped"
        )




def sample_loop(reader: QdiscReader, targets: list[Target], out: TextIO, interval: float, stop: StopFlag) -> Schedule:
    """Sample every target on the grid until asked to stop."""
    # The grid is whole multiples of the interval on the monotonic clock, not the sampler's own
    # start: in virtual time, where that start depends on the machine image (docs/uml.md), the
    # samples are then taken at the same instants whatever image the guest runs.
    sched = Schedule(math.ceil(time.monotonic() / interval) * interval, interval)
    last_flush = sched.start
    while not stop.requested:
        slot = sched.wait()
        if stop.requested:
            break
        t = time.monotonic()
        rows = reader.stats_many(targets)
        done = time.monotonic()
        t_row = (t + done) / 2          # the kernel read the counters in between
        for tg, row in zip(targets, rows, strict=True):
            out.write(f"{t_row:.6f},{tg.dev},{tg.role},{','.join(map(str, row))}\n")
        sched.taken(slot, t, done)
        if t - last_flush >= FLUSH_EVERY_S:
            out.flush()
            last_flush = t
    return sched


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testbed.qdisc_sampler", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--interval", type=float, default=0.01, help="seconds between samples")
    ap.add_argument("--dev", type=parse_target, action="append", required=True, metavar="DEV:ROLE:HANDLE")
    ap.add_argument("--rt-priority", type=int, default=10, help="SCHED_FIFO priority, 0 = normal scheduling")
    args = ap.parse_args(argv)
    if args.interval <= 0:
        ap.error("--interval must be > 0")
    stop = StopFlag()
    reader = QdiscReader()
    try:
        targets = [reader.resolve(t) for t in args.dev]
        with args.out.open("w") as out:  # closing flushes, also when a device vanishes mid-run
            out.write(HEADER)
            with realtime(args.rt_priority) as policy:
                sched = sample_loop(reader, targets, out, args.interval, stop)
    except SamplerError as e:
        print(f"qdisc_sampler: {e}", file=sys.stderr)
        return 1
    finally:
        reader.close()
    print(f"{sched.summary()}; {policy}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
