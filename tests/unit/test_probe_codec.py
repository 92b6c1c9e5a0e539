"""tcprepro.probe_codec: the column form of a tcp_probe trace gives the text back byte for byte
(header lines, interleaved flows, sequence wrap, odd values) and is much smaller once compressed."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from tcprepro import probe_codec as codec

REAL = Path(__file__).resolve().parents[1] / "data" / "tcp_probe_real.trace"
HEAD_A = "          iperf3-4791    [001] ..s1.   "
HEAD_B = "          <idle>-0       [000] ..s2.   "


def event(head: str, t: str, sport: int, nxt: str, una: str, extra: str = "") -> str:
    return (f"{head}{t}: tcp_probe: family=AF_INET src=10.0.1.10:{sport} dest=10.0.2.10:5201 mark=0x0 "
            f"data_len=0 snd_nxt={nxt} snd_una={una} snd_cwnd=10 ssthresh=2147483647 srtt=40219{extra}")


def test_a_real_trace_round_trips_and_compresses_better() -> None:
    text = REAL.read_text()
    form = codec.encode(text)
    assert codec.decode(form) == text
    assert codec.encode_lossless(text.encode()) == form.encode()
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
    with pytest.raises(codec.CodecError, match="not a tcp_probe column form"):
        codec.decode("something else\n{}\n")
    cut = form[: len(form) // 2]
    with pytest.raises(codec.CodecError, match="damaged"):
        codec.decode(cut)


def test_bytes_that_are_not_text_are_left_alone() -> None:
    assert codec.encode_lossless(b"\xff\xfe tcp_probe") is None
