"""testbed.fidelity.packet_size_check on hand-made qdisc samples: it must tolerate the reads that
race a dequeue (bytes and packets updated separately) and still catch GSO super-packets."""

from __future__ import annotations

from pathlib import Path

from testbed.fidelity import packet_size_check
from testbed.shaping import MTU

HEADER = "t,dev,role,backlog_bytes,backlog_pkts,drops,sent_bytes,sent_pkts,overlimits\n"


def write_samples(path: Path, forward: list[tuple[int, int]], reverse: list[tuple[int, int]] = ()) -> Path:
    """(backlog bytes, backlog packets) per sample, forward then reverse, 1 ms apart."""
    rows = [("rt-eth1", "forward", b, p) for b, p in forward] + [("rt-eth0", "reverse", b, p) for b, p in reverse]
    path.write_text(HEADER + "".join(f"{i / 1000:.6f},{dev},{role},{b},{p},0,0,0,0\n"
                                     for i, (dev, role, b, p) in enumerate(rows)))
    return path


def test_mtu_sized_packets_pass(tmp_path: Path) -> None:
    got = packet_size_check(write_samples(tmp_path / "q.csv", [(MTU * n, n) for n in range(1, 9)] * 50))
    assert got["pass"] is True and got["measured"] == MTU


def test_a_few_percent_of_racy_reads_pass(tmp_path: Path) -> None:
    """3 % of reads pair n+1 packets' bytes with a count of n, on a short queue (n = 4..8)."""
    clean = [(MTU * n, n) for n in range(4, 9)] * 194
    racy = [(MTU * (n + 1), n) for n in range(4, 9)] * 6
    got = packet_size_check(write_samples(tmp_path / "q.csv", clean + racy))
    assert got["pass"] is True
    assert "3.0% of samples above the MTU" in got["note"]


def test_gso_super_packets_fail(tmp_path: Path) -> None:
    """Offloads left on: TCP's skbs carry several segments each, so nearly every sample is inflated."""
    gso = [(MTU * segs * n, n) for n in range(1, 6) for segs in (2, 4, 44)] * 30
    clean = [(MTU * n, n) for n in range(1, 6)] * 10
    got = packet_size_check(write_samples(tmp_path / "q.csv", gso + clean))
    assert got["pass"] is False and got["measured"] > 2 * MTU


def test_only_the_forward_queue_counts(tmp_path: Path) -> None:
    """ACKs queued in the reverse direction are small; they must not dilute the data queue's samples."""
    gso = [(2 * MTU * n, n) for n in range(1, 5)] * 10
    acks = [(66 * n, n) for n in range(1, 5)] * 1000
    assert packet_size_check(write_samples(tmp_path / "q.csv", gso, acks))["pass"] is False


def test_an_empty_queue_is_not_evaluated(tmp_path: Path) -> None:
    got = packet_size_check(write_samples(tmp_path / "q.csv", [(0, 0)] * 20))
    assert got["pass"] is None and got["measured"] is None
