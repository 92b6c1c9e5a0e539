"""analysis.tcp_owd on hand-made capture lines: which ACKs give LEDBAT's delay samples, and the
sample set beside the queue the acknowledged data met."""
from __future__ import annotations

import numpy as np
import pytest

from analysis import tcp_owd

RX, TX = "10.0.2.10", "10.0.1.10"


def ack(t: float, ack_no: int, val: int, ecr: int, flags: str = ".", port: int = 20001, cport: int = 42922) -> str:
    return (f"{t:.6f} IP {RX}.{port} > {TX}.{cport}: Flags [{flags}], ack {ack_no}, win 266, "
            f"options [nop,nop,TS val {val} ecr {ecr}], length 0")


def test_only_acks_of_new_data_with_a_fresh_echo_count() -> None:
    lines = [
        f"100.000000 IP {TX}.42922 > {RX}.20001: Flags [.], seq 1:1449, ack 1, win 83, "
        "options [nop,nop,TS val 500 ecr 900], length 1448",                  # data from the sender
        ack(100.000, 4000000000, 1000, 500, flags="S."),                     # the handshake
        ack(100.040, 4294966000, 1040, 500),                                 # OWD 540: the smallest
        ack(100.041, 4294966000, 1041, 501),                                 # a duplicate ACK
        ack(100.050, 1000, 1050, 505),                                       # new data past 2^32: OWD 545
        ack(100.051, 2000, 1050, 505),                                       # the same (TSval, TSecr) again
        ack(100.060, 3000, 1070, 520, port=20002),                           # another flow
        ack(100.061, 7, 1071, 521, cport=42920),                             # iperf3's control connection
        ack(100.070, 3000, 1080, 0),                                         # no echo
    ]
    got = tcp_owd.ack_samples(lines, RX, t_offset_s=100.0)
    assert sorted(got) == [(20001, 42920), (20001, 42922), (20002, 42922)]
    assert got[(20001, 42922)].perceived_ms.tolist() == [0.0, 5.0]
    assert got[(20001, 42922)].t == pytest.approx([0.040, 0.050])
    assert got[(20002, 42922)].perceived_ms.tolist() == [0.0]


def test_excess_is_the_sample_less_the_queue_the_data_met() -> None:
    # the queue grows 0 -> 20 ms over 2 s (10-ms samples); LEDBAT's samples read it 1.2 ms high,
    # each ACK arriving one 20-ms reverse delay after its data met the queue
    qt = np.arange(0, 2, 0.01)
    queue = qt * 10
    t = np.arange(0.5, 2, 0.05)
    seen = np.round(queue[np.searchsorted(qt, t - 0.02, side="right") - 1] + 1.2, 6)
    r = tcp_owd.excess(tcp_owd.Samples(t, seen), qt, queue, reverse_delay_ms=20, t_from=1.0)
    assert r["n"] == len(t[t >= 1.0])
    assert r["excess_p50_ms"] == pytest.approx(1.2)
    assert r["queue_p50_ms"] == pytest.approx(np.median(queue[np.searchsorted(qt, t[t >= 1] - 0.02, "right") - 1]))
    assert tcp_owd.excess(tcp_owd.Samples(t, seen), qt, queue, 20, t_from=5.0) == {"n": 0}
