"""testbed.fidelity.delay_signal_check on a hand-made capture (written as a pcap, read back by the
real tcpdump) and hand-made queue samples: a LEDBAT flow whose timestamps read the queue passes,
one that sees delay the queue never held fails, and a late-comer reading low is not the emulator's."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

from testbed.fidelity import delay_signal_check
from testbed.shaping import DirectionSpec

pytestmark = pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump not installed (make deps)")

RX, TX = "10.0.2.10", "10.0.1.10"
T0, WALL = 1000.0, 5000.0           # t0 on the monotonic clock; realtime - monotonic
RATE_KBIT = 10000
FORWARD = DirectionSpec.from_config({"rate_kbit": RATE_KBIT, "delay_ms": 20, "limit_packets": 60})


def _ip4(a: str) -> bytes:
    return bytes(int(x) for x in a.split("."))


def ack_frame(ack_no: int, tsval: int, tsecr: int, sport: int = 20001, dport: int = 42922) -> bytes:
    """Ethernet + IPv4 + TCP ACK (flags .) with a timestamp option, from the receiver to the sender."""
    opts = b"\x01\x01\x08\x0a" + struct.pack("!II", tsval, tsecr)
    tcp = struct.pack("!HHIIBBHHH", sport, dport, 1, ack_no, (20 + len(opts)) // 4 << 4, 0x10, 500, 0, 0) + opts
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, _ip4(RX), _ip4(TX))
    return b"\x00" * 12 + b"\x08\x00" + ip + tcp


def write_pcap(path: Path, packets: list[tuple[float, bytes]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for t, frame in packets:
        sec, usec = divmod(round(t * 1e6), 1_000_000)
        out.append(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)
    path.write_bytes(b"".join(out))


def make_trial(tmp: Path, queue_ms: list[tuple[float, float]], acks: list[tuple[float, float]],
               cc: str = "ledbat") -> tuple[dict[str, Any], dict[str, Any]]:
    """queue_ms: (t, forward backlog in ms) steps; acks: (t, TSval - TSecr in ms, less a constant
    60-ms clock offset) at the sender. Times are seconds on the trial's clock."""
    rows = [f"{T0 + t:.6f},rt-eth1,forward,{int(q * RATE_KBIT / 8)},{int(q * RATE_KBIT / 8 / 1500)},0,0,0,0\n"
            for t, q in queue_ms]
    (tmp / "qdisc.csv").write_text("t,dev,role,backlog_bytes,backlog_pkts,drops,sent_bytes,sent_pkts,overlimits\n"
                                   + "".join(rows))
    write_pcap(tmp / "pcap" / "s0.pcap", [(WALL + T0 + t, ack_frame(1000 * (i + 1), 7000 + i + int(owd), 6940 + i))
                                          for i, (t, owd) in enumerate(acks)])
    spec = {"duration_s": 40, "flows": [{"id": "bulk0", "kind": "bulk", "cc": cc}],
            "scenario": {"bottleneck": {"forward": {"rate_kbit": RATE_KBIT, "delay_ms": 20, "limit_packets": 60},
                                        "reverse": {"rate_kbit": RATE_KBIT, "delay_ms": 20, "limit_packets": 60}}}}
    prov = {"t0_monotonic": T0, "realtime_minus_monotonic_s": WALL,
            "endpoints": {"bulk0": {"sender": TX, "receiver": RX, "port": 20001}}}
    (tmp / "spec.json").write_text(json.dumps(spec))
    (tmp / "provenance.json").write_text(json.dumps(prov))
    return spec, prov


def queue_steps(level_ms: float) -> list[tuple[float, float]]:
    """Empty for 5 s, then `level_ms` for 25 s; one sample every 10 ms."""
    return [(i / 100, 0.0 if i < 500 else level_ms) for i in range(3000)]


def acks_seeing(extra_ms: float, level_ms: float = 20.0, start_s: float = 1.0) -> list[tuple[float, float]]:
    """An ACK every 20 ms from start_s; its sample the queue its data met 20 ms earlier plus extra_ms."""
    out = []
    for i in range(int((29.0 - start_s) / 0.02)):
        t = start_s + i * 0.02
        met = 0.0 if t - 0.02 < 5 else level_ms
        out.append((t, round(met + extra_ms)))
    return out


def test_samples_that_read_the_queue_pass(tmp_path: Path) -> None:
    spec, prov = make_trial(tmp_path, queue_steps(20), acks_seeing(1))
    got = delay_signal_check(tmp_path, spec, prov, FORWARD)
    assert got["pass"] is True
    assert got["measured"] == pytest.approx(0.0, abs=0.01)   # the constant extra is in the base too
    assert "(1400 samples)" in got["note"]
    assert got["tolerance"] == "+4.4"                          # two 1500-byte packets at 10 Mbit/s + 2 ms


def test_delay_the_queue_never_held_fails(tmp_path: Path) -> None:
    """From 5 s on, the samples read 8 ms above the queue: delay added outside the measured qdisc."""
    acks = [(t, owd + (8 if t >= 5.02 else 0)) for t, owd in acks_seeing(0)]
    spec, prov = make_trial(tmp_path, queue_steps(20), acks)
    got = delay_signal_check(tmp_path, spec, prov, FORWARD)
    assert got["pass"] is False
    assert got["measured"] == pytest.approx(8.0, abs=0.01)
    assert "bulk0 8.00" in got["note"]


def test_a_late_comer_reading_low_is_not_the_emulator(tmp_path: Path) -> None:
    """A flow that starts into the standing 20-ms queue takes it for base delay: it reads 20 ms low."""
    spec, prov = make_trial(tmp_path, queue_steps(20), acks_seeing(0, start_s=10.0))
    got = delay_signal_check(tmp_path, spec, prov, FORWARD)
    assert got["pass"] is True and got["measured"] == pytest.approx(-20.0, abs=0.01)


def test_loss_based_flows_are_not_checked(tmp_path: Path) -> None:
    spec, prov = make_trial(tmp_path, queue_steps(20), acks_seeing(30), cc="cubic")
    assert delay_signal_check(tmp_path, spec, prov, FORWARD) is None


def test_without_a_capture_it_is_not_measured(tmp_path: Path) -> None:
    spec, prov = make_trial(tmp_path, queue_steps(20), acks_seeing(0))
    shutil.rmtree(tmp_path / "pcap")
    got = delay_signal_check(tmp_path, spec, prov, FORWARD)
    assert got["pass"] is None and "no sender capture" in got["note"]
