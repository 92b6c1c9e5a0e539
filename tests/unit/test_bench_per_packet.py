"""benchmarks/per_packet.py: its paper loads as the workflow would load it, and its arithmetic
separates a cost per packet from a cost per virtual second (on made-up runs whose costs are known)."""
from __future__ import annotations

import pytest

from benchmarks import per_packet
from configuration import CHECKOUT
from experiments import load_paper


def test_the_benchmark_paper_is_a_paper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TCPREPRO_PAPER_DIR", str(CHECKOUT / "benchmarks" / "papers"))
    cfg = load_paper(per_packet.PAPER)
    assert [c.cell_id for c in cfg.cells("full")] == [f"r{r}-t{s}" for r in per_packet.RATES_KBIT
                                                      for s in per_packet.SECONDS]
    spec = cfg.trial_spec("r20000-t70", 1, "full")
    assert spec["duration_s"] == 70 and spec["scenario"]["bottleneck"]["forward"]["rate_kbit"] == 20000


def test_per_packet_and_per_second_costs_are_separated() -> None:
    """CPU = 3 s fixed + 0.2 ms per packet + 50 ms per virtual second; packets = rate/12 per second."""
    runs = {}
    for rate in per_packet.RATES_KBIT:
        for s in per_packet.SECONDS:
            pkts = int(rate / 12 * s)
            cpu = 3 + 0.0002 * pkts + 0.05 * s
            runs[f"r{rate}-t{s}"] = per_packet.Run(f"r{rate}-t{s}", cpu, 10.0, None, pkts, s, True)
    rates = per_packet.per_rate(runs)
    assert len(rates) == 3
    fit = per_packet.split(rates)
    assert fit is not None
    assert fit[0] == pytest.approx(0.2, rel=1e-3) and fit[1] == pytest.approx(50, rel=1e-3)
    runs["r1000-t70"].ok = False
    assert [r.rate_kbit for r in per_packet.per_rate(runs)] == [10000, 20000]
