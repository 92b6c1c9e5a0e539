"""qdisc sampler on the real kernel: a 1 Mbit/s htb with a 30000-byte bfifo leaf, flooded by UDP."""

from __future__ import annotations

import csv
import itertools
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.netns import NetnsPair, netns_pair

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (netns, tc)"),
]

LIMIT = 30000
RATE_BPS = 1_000_000
SUMMARY_RX = re.compile(r"(\d+) samples, mean interval ([\d.]+) ms .*?, (\d+) late .*?, (\d+) slots skipped")


@pytest.fixture
def bottleneck() -> Iterator[NetnsPair]:
    """Namespace A egress: htb 1 Mbit/s root 1:, bfifo limit 30000 leaf 2:; B is the sink."""
    with netns_pair("qs", "10.78.0.0/24", dev_a="qa", dev_b="qb") as net:
        tc = (net.a, "tc")
        net.run(*tc, "qdisc", "add", "dev", net.dev_a, "root", "handle", "1:", "htb", "default", "10")
        net.run(*tc, "class", "add", "dev", net.dev_a, "parent", "1:", "classid", "1:10", "htb", "rate", "1mbit")
        net.run(*tc, "qdisc", "add", "dev", net.dev_a, "parent", "1:10", "handle", "2:", "bfifo", "limit", str(LIMIT))
        yield net


def _sampler(net: NetnsPair, out: Path, *devs: str) -> subprocess.Popen[Any]:
    args = ["-m", "testbed.qdisc_sampler", "--out", str(out), "--interval", "0.01"]
    for d in devs:
        args += ["--dev", d]
    return net.python(net.a, *args, stderr=subprocess.PIPE, text=True)


def _wait_rows(path: Path, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 10
    while not (path.exists() and path.read_text().count("\n") >= 2):
        assert proc.poll() is None, "sampler exited early"
        assert time.monotonic() < deadline, "sampler wrote no rows"
        time.sleep(0.05)


def _flood(net: NetnsPair, seconds: int) -> None:
    """UDP at 5 Mbit/s into the 1 Mbit/s bottleneck: the bfifo stays full and drops."""
    net.popen(net.b, "iperf3", "-s", "-1", "-p", "20201", stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 5
    while not net.run(net.b, "ss", "-Htln", "sport = :20201").strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    net.run(net.a, "iperf3", "-c", net.ip_b, "-p", "20201", "-u", "-b", "5M", "-t", str(seconds))


def _backlogged_rate(rows: list[dict[str, str]]) -> float:
    """bit/s of sent_bytes over the longest stretch in which the queue never ran below 10 kB."""
    best: tuple[int, int] = (0, 0)
    start = None
    for i, r in enumerate([*rows, {"backlog_bytes": "0"}]):
        busy = int(r["backlog_bytes"]) > 10000
        if busy and start is None:
            start = i
        if not busy and start is not None:
            best = max(best, (start, i - 1), key=lambda se: se[1] - se[0])
            start = None
    first, last = rows[best[0]], rows[best[1]]
    sent = int(last["sent_bytes"]) - int(first["sent_bytes"])
    return sent * 8 / (float(last["t"]) - float(first["t"]))


def test_sampler_sees_full_bfifo_drain_at_link_rate(bottleneck: NetnsPair, tmp_path: Path) -> None:
    out = tmp_path / "qdisc.csv"
    proc = _sampler(bottleneck, out, f"{bottleneck.dev_a}:forward:2:")
    _wait_rows(out, proc)
    _flood(bottleneck, 3)
    time.sleep(0.2)
    t_stop = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    rows = list(csv.DictReader(out.open()))
    assert {r["dev"] for r in rows} == {bottleneck.dev_a} and {r["role"] for r in rows} == {"forward"}
    backlog = [int(r["backlog_bytes"]) for r in rows]
    drops = [int(r["drops"]) for r in rows]
    assert max(backlog) <= LIMIT
    assert max(backlog) >= LIMIT - 1600, f"queue peaked at {max(backlog)} bytes"
    assert drops[-1] > 0 and drops == sorted(drops)
    rate = _backlogged_rate(rows)
    print(f"drain rate while backlogged {rate / 1e3:.1f} kbit/s; {err.strip()}")
    assert abs(rate / RATE_BPS - 1) < 0.03
    ts = [float(r["t"]) for r in rows]
    assert t_stop - ts[-1] < 0.05, "the final samples were not flushed"
    m = SUMMARY_RX.search(err)
    assert m, err
    samples, mean_ms, late = int(m[1]), float(m[2]), int(m[3])
    assert samples == len(rows)
    # Tolerances leave room for a host shared with busy VMs: stalls there skip a few slots.
    assert abs(mean_ms - 10.0) < 0.3
    gaps = sorted(b - a for a, b in itertools.pairwise(ts))
    assert abs(gaps[len(gaps) // 2] - 0.010) < 0.0003
    assert late <= samples * 0.05
    off_grid = [abs(x - round(x)) for x in ((t - ts[0]) / 0.010 for t in ts)]
    assert sum(o > 0.3 for o in off_grid) <= samples * 0.05, "samples drifted off the 10 ms grid"


@pytest.mark.parametrize(
    ("spec", "needle"),
    [("qa:forward:9:", "no qdisc with handle 9: on qa"), ("nosuch:forward:2:", "no device 'nosuch'")],
)
def test_sampler_rejects_missing_qdisc_or_device(
    bottleneck: NetnsPair, tmp_path: Path, spec: str, needle: str
) -> None:
    out = tmp_path / "qdisc.csv"
    proc = _sampler(bottleneck, out, f"{bottleneck.dev_a}:forward:2:", spec)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 1
    assert needle in err
    assert not out.exists(), "no CSV for a run that never sampled"
