"""LEDBAT's per-cell time bounds: a guard against a hung trial that never cuts a live, slow flow."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from experiments import load_paper

ROOT = Path(__file__).resolve().parents[2]
MSS = 1448            # payload bytes per segment (1500-byte MTU, timestamps on)
WIRE = 1500           # bytes a queued packet occupies on the link


def min_cwnd() -> int:
    """MIN_CWND as the algorithm's one source defines it (cc/ledbat/ledbat.h)."""
    m = re.search(r"#define\s+MIN_CWND\s+(\d+)", (ROOT / "cc" / "ledbat" / "ledbat.h").read_text())
    assert m, "cc/ledbat/ledbat.h no longer defines MIN_CWND"
    return int(m.group(1))


def floor_bound_s(scenario: dict) -> float:
    """The last flow's start plus its transfer at a live flow's floor rate: MIN_CWND segments per
    round trip with the bottleneck queue full."""
    fwd = scenario["bottleneck"]["forward"]
    rtt_s = 2 * fwd["delay_ms"] / 1000 + fwd["limit_packets"] * WIRE * 8 / (fwd["rate_kbit"] * 1000)
    floor_bps = min_cwnd() * MSS * 8 / rtt_s
    ends = [f["start_s"] + f.get("stagger_s", 0) * (f["count"] - 1) + f["bytes"] * 8 / floor_bps
            for f in scenario["flows"] if f["count"]]
    return max(ends)


CELLS = sorted(load_paper("ledbat").cells_by_id.items())


@pytest.mark.parametrize("cell_id,cell", CELLS, ids=[c for c, _ in CELLS])
def test_bound_lets_a_flow_at_its_minimum_window_finish(cell_id: str, cell) -> None:
    need = floor_bound_s(cell.scenario)
    bound = cell.scenario["duration_s"]
    assert need <= bound < need + 10, f"{cell_id}: bound {bound} s, the floor rule gives {math.ceil(need)} s"

