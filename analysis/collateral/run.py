"""What every collateral figure reads: the run's cells (figures/common.py) and the paper's axes."""
from __future__ import annotations

from pathlib import Path

from figures.common import PaperRun, style

__all__ = ["CCS", "FLOWS", "RTTS", "Run", "style"]

CCS = ("newreno", "htcp", "cubic")
FLOWS = (1, 2, 5)
RTTS = (50, 100)


class Run(PaperRun):
    """One profile's collateral results."""

    @classmethod
    def load(cls, profile: str, results: Path, out: Path) -> Run:   # type: ignore[override]
        return super().load("collateral", profile, results, out)

    def cell_id(self, cc: str, rtt: int, flows: int) -> str:
        return f"{cc}-rtt{rtt}-f{flows}"
