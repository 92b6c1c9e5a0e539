"""The queueing delay a delay-based sender perceives, against the queue the bottleneck really held.

LEDBAT (RFC 6817, cc/bpf/ledbat.bpf.c) takes one one-way delay sample per ACK of new data, TSval -
TSecr (1-ms ticks, an unknown constant offset), and reads the queue as that sample less the
smallest one seen. Recomputed here from the sender's capture (a trial with `keep_pcap: true`), each
sample is set beside the forward bottleneck's backlog when the acknowledged data crossed it (qdisc.csv,
backlog / rate, one reverse delay before the ACK reached the sender). The difference is what the
emulated path adds to the delay signal beyond its queue: with delayed ACKs about one packet's time
at the bottleneck (the ACK waits for the second segment), plus the clock's 1-ms ticks; anything
larger is delay the emulator hides from the qdisc.

    python -m analysis.tcp_owd results/<profile>/<paper>/<cell>/trial-<k> [--from S] [--to S]
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.metrics import role_samples
from analysis.parsers import read_qdisc

# tcpdump -S -tt -nn: "<epoch s> IP <src>.<port> > <dst>.<port>: Flags [..], ... ack N, ... TS val V ecr E], length L"
_LINE = re.compile(r"^(?P<t>\d+\.\d+) IP (?P<src>[\d.]+)\.(?P<sport>\d+) > (?P<dst>[\d.]+)\.(?P<dport>\d+): "
                   r"Flags \[(?P<flags>[^\]]*)\].*? ack (?P<ack>\d+),.*?TS val (?P<val>\d+) ecr (?P<ecr>\d+)\]")


@dataclass
class Samples:
    """One flow's delay samples, as LEDBAT takes them: at each ACK of new data."""

    t: np.ndarray               # the ACK's arrival, s on the trial's clock (since t0_monotonic)
    perceived_ms: np.ndarray    # TSval - TSecr less the flow's smallest


Conn = tuple[int, int]          # (receiver port, sender port): one connection


def ack_samples(tcpdump_lines: Iterable[str], receiver: str, t_offset_s: float) -> dict[Conn, Samples]:
    """Per connection, the ACKs from `receiver` that acknowledge new data, skipping repeats of the
    previous (TSval, TSecr) pair and echoes of 0 (as the sender does); times shifted by
    -t_offset_s (capture clock to trial clock). iperf3's control connection shares the data
    connection's receiver port, so connections are told apart by both ports."""
    rows: dict[Conn, list[tuple[float, int]]] = {}
    high: dict[Conn, int] = {}
    last: dict[Conn, tuple[int, int]] = {}
    for line in tcpdump_lines:
        m = _LINE.match(line)
        if not m or m["src"] != receiver:
            continue
        port, ack, val, ecr = (int(m["sport"]), int(m["dport"])), int(m["ack"]), int(m["val"]), int(m["ecr"])
        prev = high.get(port)
        if "S" in m["flags"] or ecr == 0 or (prev is not None and not 0 < (ack - prev) % (1 << 32) < 1 << 31):
            continue            # the handshake, no echo, or no new data acknowledged
        high[port] = ack
        if last.get(port) == (val, ecr):
            continue
        last[port] = (val, ecr)
        owd = (val - ecr) % (1 << 32)
        rows.setdefault(port, []).append((float(m["t"]) - t_offset_s, owd - (1 << 32) if owd >= 1 << 31 else owd))
    out = {}
    for port, r in rows.items():
        times, delays = np.array([x[0] for x in r]), np.array([x[1] for x in r], dtype=float)
        out[port] = Samples(times, delays - delays.min())
    return out


def queue_at(qt: np.ndarray, queue_ms: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The queue's last sample at or before each time (NaN before the first)."""
    i = np.searchsorted(qt, t, side="right") - 1
    return np.where(i >= 0, queue_ms[np.clip(i, 0, None)], np.nan)


def excess(samples: Samples, qt: np.ndarray, queue_ms: np.ndarray, reverse_delay_ms: float,
           t_from: float | None = None, t_to: float | None = None) -> dict[str, float]:
    """Percentiles of the perceived delay, of the queue the data met, and of their difference."""
    t = samples.t
    keep = np.ones(len(t), dtype=bool)
    if t_from is not None:
        keep &= t >= t_from
    if t_to is not None:
        keep &= t <= t_to
    real = queue_at(qt, queue_ms, t[keep] - reverse_delay_ms / 1000)
    seen = samples.perceived_ms[keep]
    ok = ~np.isnan(real)
    seen, real = seen[ok], real[ok]
    if not len(seen):
        return {"n": 0}
    pct = {"p10": 10, "p50": 50, "p90": 90}
    return {"n": len(seen),
            **{f"perceived_{k}_ms": float(np.percentile(seen, q)) for k, q in pct.items()},
            **{f"queue_{k}_ms": float(np.percentile(real, q)) for k, q in pct.items()},
            "excess_p50_ms": float(np.median(seen - real))}


def capture_lines(pcaps: Iterable[Path], receiver: str) -> Iterator[str]:
    """tcpdump's lines for the packets `receiver` sent, streamed (a 1000-MB trial's capture holds
    millions of segments; only its ACKs are wanted)."""
    for pcap in pcaps:
        with subprocess.Popen(["tcpdump", "-S", "-tt", "-nn", "-r", str(pcap), "src", "host", receiver],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            assert proc.stdout is not None
            yield from proc.stdout
            err = proc.stderr.read() if proc.stderr else ""
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, proc.args, stderr=err)


def trial_report(trial: Path, t_from: float | None = None, t_to: float | None = None,
                 flows: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
    """Per flow of a trial that still has its capture (pcap/s<pair>.pcap: kept with
    `keep_pcap: true`, or not yet finalized), the numbers above; `flows` limits which."""
    spec = json.loads((trial / "spec.json").read_text())
    prov = json.loads((trial / "provenance.json").read_text())
    fwd = spec["scenario"]["bottleneck"]["forward"]
    rev_delay = float(spec["scenario"]["bottleneck"]["reverse"].get("delay_ms", 0))
    q = role_samples(read_qdisc(trial / "qdisc.csv"), "forward")
    qt = q["t"].to_numpy(float) - prov["t0_monotonic"]
    queue_ms = q["backlog_bytes"].to_numpy(float) * 8 / float(fwd["rate_kbit"])
    offset = prov["realtime_minus_monotonic_s"] + prov["t0_monotonic"]
    pcaps = sorted((trial / "pcap").glob("*.pcap"))
    if not pcaps:
        raise FileNotFoundError(f"{trial}: no pcap/*.pcap (run the cell with scenario keep_pcap: true)")
    wanted = set(prov["endpoints"]) if flows is None else set(flows)
    out: dict[str, dict[str, float]] = {}
    by_receiver: dict[str, dict[Conn, Samples]] = {}
    for flow_id, ep in prov["endpoints"].items():
        if flow_id not in wanted:
            continue
        if ep["receiver"] not in by_receiver:
            by_receiver[ep["receiver"]] = ack_samples(capture_lines(pcaps, ep["receiver"]), ep["receiver"], offset)
        conns = [c for conn, c in by_receiver[ep["receiver"]].items() if conn[0] == ep["port"]]
        if conns:       # the data connection: the one with the most ACKs of new data
            out[flow_id] = excess(max(conns, key=lambda c: len(c.t)), qt, queue_ms, rev_delay, t_from, t_to)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.tcp_owd", description=__doc__.split("\n")[0])
    ap.add_argument("trial", type=Path)
    ap.add_argument("--from", dest="t_from", type=float, help="s on the trial's clock")
    ap.add_argument("--to", dest="t_to", type=float)
    ns = ap.parse_args(argv)
    try:
        report = trial_report(ns.trial, ns.t_from, ns.t_to)
    except (FileNotFoundError, KeyError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for flow, r in report.items():
        print(f"{flow}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
