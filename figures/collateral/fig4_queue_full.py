"""Figure 4: average queue-full events per minute, counted in a 60 s window in the middle of each
trial (an event: the drop-tail queue dropping until it can accept again; analysis/metrics.py)."""
from __future__ import annotations

from pathlib import Path

from figures.collateral.bars import bars
from figures.collateral.common import Run


def main(run: Run) -> list[Path]:
    return bars(run, "q_forward_full_events_per_min", "queue-full events per minute",
                {50: "Fig. 4: queue-full events, 50 ms RTT", 100: "Fig. 4: queue-full events, 100 ms RTT"},
                "fig4_queue_full_events")
