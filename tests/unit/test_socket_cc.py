"""The congestion control each bulk flow's socket ran, read from `ss -ti` (testbed/trial.py): the
data connection's, not iperf3's control connection to the same port."""
from __future__ import annotations

from pathlib import Path

from testbed import fidelity
from testbed.trial import parse_ss_cc

DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_socket_that_moved_the_data_names_the_algorithm() -> None:
    # a real capture: iperf3's control connection (bbr, 186 bytes) and its data connection (cubic)
    assert parse_ss_cc((DATA / "ss_real.txt").read_text()) == "cubic"
    assert parse_ss_cc("ESTAB 0 0 a:1 b:2\n\t ts sack ecn htcp wscale:7,7 bytes_acked:99\n") == "htcp"
    assert parse_ss_cc("") is None


def test_a_socket_with_another_algorithm_or_none_fails_the_check() -> None:
    ok = fidelity.socket_cc_check({"bulk0": "htcp", "bulk1": "reno"}, {"bulk0": "htcp", "bulk1": "reno"})
    assert ok["pass"] and ok["measured"] == "bulk0=htcp, bulk1=reno"
    bad = fidelity.socket_cc_check({"bulk0": "htcp", "bulk1": "reno"}, {"bulk0": "cubic", "bulk1": None})
    assert bad["pass"] is False and "bulk0: cubic (wanted htcp)" in bad["note"] and "bulk1: None" in bad["note"]


def test_iperf3s_control_connection_alone_names_no_algorithm() -> None:
    """Before iperf3's data connection has moved data, the control one (the default algorithm) is
    the socket that moved the most: read with a floor, it names nothing yet."""
    control = "ESTAB 0 0 a:1 b:2\n\t ts sack cubic wscale:7,7 bytes_sent:185 bytes_acked:186\n"
    data_starting = "ESTAB 0 0 a:3 b:2\n\t ts sack htcp wscale:7,7 bytes_acked:1\n"
    assert parse_ss_cc(control + data_starting) == "cubic"
    assert parse_ss_cc(control + data_starting, min_acked=4096) is None
    moving = data_starting.replace("bytes_acked:1", "bytes_acked:14481")
    assert parse_ss_cc(control + moving, min_acked=4096) == "htcp"


def test_one_listing_answers_for_every_flow_of_a_sender() -> None:
    """`ss -Htin state established` without a port filter, cut by peer port (testbed/trial.py)."""
    from testbed.trial import split_ss_by_dport
    out = ("0 0 10.0.1.10:35388 10.0.2.10:20001\n\t ts sack reno wscale:7,7 bytes_acked:5000\n"
           "0 0 10.0.1.10:35390 10.0.2.10:20002\n\t ts sack bpf_ledbat wscale:7,7 bytes_acked:100\n"
           "0 0 [::ffff:10.0.1.10]:35392 [::ffff:10.0.2.10]:20003\n\t cubic wscale:7,7 bytes_acked:1\n")
    blocks = split_ss_by_dport(out)
    assert sorted(blocks) == [20001, 20002, 20003]
    assert [parse_ss_cc(blocks[p]) for p in (20001, 20002, 20003)] == ["reno", "bpf_ledbat", "cubic"]
    assert split_ss_by_dport("") == {}
