"""The archive's column forms (archive/stored_forms.py): tcp_probe traces and qdisc samples come
back byte for byte (header lines, interleaved flows, sequence wrap, odd values) and are much smaller
once compressed; what a form cannot hold is stored as it is."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from archive import counters_codec, stored_forms
from archive import probe_codec as codec

FIXTURES = Path(__file__).resolve().parents[1] / "data"
REAL = FIXTURES / "tcp_probe_real.trace"
HEAD_A = "          iperf3-4791    [001] ..s1.   "
HEAD_B = "          <idle>-0       [000] ..s2.   "


def event(head: str, t: str, sport: int, nxt: str, una: str, extra: str = "") -> str:
    return (f"{head}{t}: tcp_probe: family=AF_INET src=10.0.1.10:{sport} dest=10.0.2.10:5201 mark=0x0 "
            f"data_len=0 snd_nxt={nxt} snd_una={una} snd_cwnd=10 ssthresh=2147483647 srtt=40219{extra}")


def test_a_real_trace_round_trips_and_compresses_better() -> None:
    text = REAL.read_text()
    form = codec.encode(text)
    assert codec.decode(form) == text
    assert stored_forms.to_form("invalid-attempts/1/tcp_probe.trace", text.encode()) == form.encode()
    plain, columns = len(lzma.compress(text.encode())), len(lzma.compress(form.encode()))
    assert columns * 3 < plain * 2, (plain, columns)   # 1.7 times smaller here, 2.8 on a full trial


def test_hand_made_lines_round_trip() -> None:
    lines = [
        "# tracer: nop",
        event(HEAD_A, "425.900439", 40000, "0xfffffff0", "0xffffff00"),
        event(HEAD_B, "425.900501", 40002, "0x10", "0x0"),                      # a second flow
        event(HEAD_A, "425.900502", 40000, "0x5a8", "0xfffffff0"),              # wrapped past 2^32
        event(HEAD_B, "425.901000", 40002, "0x5b8", "0x10", " sock_cookie=1a"),  # another field set
        event(HEAD_A, "426.000000", 40000, "1448", "0x5a8"),                    # not hex: kept as it is
        event(HEAD_A, "0426.000001", 40000, "0x5a8", "0x5a8"),                  # leading zero: whole line
        "   some-other-event: not tcp_probe",
        "",
    ]
    text = "\n".join(lines)
    form = codec.encode(text)
    assert codec.decode(form) == text
    assert column(form, "v:snd_nxt") == ["=0xfffffff0", "=0x10", "1464", "1448", "=1448"]   # 1464 = 0x5a8 + 0x10


def column(form: str, name: str) -> list[str]:
    """One column of the form, read by its header."""
    import json
    _, header, body = form.split("\n", 2)
    counts, rows, at = json.loads(header)["columns"], body.split("\n"), 0
    for n, count in counts.items():
        if n == name:
            return rows[at:at + count]
        at += count
    raise KeyError(name)


def test_a_damaged_form_is_an_error() -> None:
    form = codec.encode(REAL.read_text())
    with pytest.raises(codec.CodecError, match=r"damaged tcp_probe column form.*not a 'tcprepro-probe-columns 1' form"):
        codec.decode("something else\n{}\n")
    cut = form[: len(form) // 2]
    with pytest.raises(codec.CodecError, match="damaged"):
        codec.decode(cut)


def test_what_a_form_cannot_hold_is_left_alone() -> None:
    assert stored_forms.to_form("tcp_probe.trace", b"\xff\xfe tcp_probe") is None
    assert stored_forms.to_form("qdisc.csv", b"t,dev\n1.0,eth0,extra\n") is None      # ragged row
    assert stored_forms.to_form("qdisc.csv", b"t,role\n1.0,forward\n") is None        # no device column
    assert stored_forms.to_form("summary.json", b"{}") is None
    assert stored_forms.member_file("qdisc.csv.columns") == "qdisc.csv"
    assert stored_forms.member_file("notes.columns") == "notes.columns"


def test_real_qdisc_samples_round_trip_and_compress_better() -> None:
    text = (FIXTURES / "qdisc_real.csv").read_text()
    form = counters_codec.encode(text)
    assert counters_codec.decode(form) == text
    plain, columns = len(lzma.compress(text.encode())), len(lzma.compress(form.encode()))
    assert columns * 3 < plain * 2, (plain, columns)


def test_hand_made_samples_round_trip() -> None:
    rows = ["t,dev,role,backlog_bytes,drops,sent_bytes",
            "9.999990,eth1,forward,0,0,5304",
            "10.000001,eth0,reverse,0,0,5248",          # another device: its own differences
            "10.010000,eth1,forward,1514,0,6818",
            "10.0200,eth1,forward,-3,0,6818",            # fewer digits, a negative integer
            "10.030000,eth1,forward,x,007,6818",         # not numbers: kept as they are
            ""]
    text = "\n".join(rows)
    form = counters_codec.encode(text)
    assert counters_codec.decode(form) == text
    assert "=9.999990\n=10.000001\n10010\n" in form     # eth1's second row: + 10010 us since its first
    assert counters_codec.decode(counters_codec.encode(text.rstrip("\n"))) == text.rstrip("\n")
    with pytest.raises(counters_codec.CodecError, match="damaged"):
        counters_codec.decode(form.replace("10010", "zz"))
