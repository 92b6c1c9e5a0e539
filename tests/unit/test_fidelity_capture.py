"""The sender captures are complete (testbed/fidelity.py capture_check): tcpdump writes through a
buffer and flushes when it stops, so the records in its file must match the count it reports, and
the kernel must have dropped none before it."""
from __future__ import annotations

import struct
from pathlib import Path

from testbed import fidelity

GLOBAL = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 128, 1)


def _pcap(n: int, size: int = 66) -> bytes:
    return GLOBAL + b"".join(struct.pack("<IIII", 1_767_225_600 + i, 0, size, size) + bytes(size) for i in range(n))


def _trial(tmp_path: Path, data: bytes, log: str) -> Path:
    (tmp_path / "pcap").mkdir()
    (tmp_path / "pcap" / "s0.pcap").write_bytes(data)
    (tmp_path / "pcap" / "s0.log").write_text(
        "tcpdump: listening on s0-eth0, link-type EN10MB (Ethernet), snapshot length 128 bytes\n" + log)
    return tmp_path


def _counts(captured: int, dropped: int) -> str:
    return f"{captured} packets captured\n{captured} packets received by filter\n{dropped} packets dropped by kernel\n"


def test_a_complete_capture_passes(tmp_path: Path) -> None:
    c = fidelity.capture_check(_trial(tmp_path, _pcap(500), _counts(500, 0)))
    assert c is not None and c["pass"] and c["measured"] == 0 and "500 records of 500 captured" in c["note"]


def test_a_capture_cut_short_fails(tmp_path: Path) -> None:
    data = _pcap(500)
    (tmp_path / "cut.pcap").write_bytes(data[:-30])
    assert fidelity.pcap_records(tmp_path / "cut.pcap") == 499
    c = fidelity.capture_check(_trial(tmp_path, data[:-4096], _counts(500, 0)))
    assert c is not None and not c["pass"] and c["measured"] == 1


def test_kernel_drops_fail(tmp_path: Path) -> None:
    c = fidelity.capture_check(_trial(tmp_path, _pcap(500), _counts(500, 3)))
    assert c is not None and not c["pass"] and "3 dropped by kernel" in c["note"]


def test_a_tcpdump_that_did_not_stop_cleanly_fails(tmp_path: Path) -> None:
    c = fidelity.capture_check(_trial(tmp_path, _pcap(10), ""))
    assert c is not None and not c["pass"] and "did not stop cleanly" in c["note"]


def test_no_capture_no_check(tmp_path: Path) -> None:
    assert fidelity.capture_check(tmp_path) is None
