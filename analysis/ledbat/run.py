"""What every LEDBAT figure reads: the run's cells with analysis/ledbat/metrics.py's metrics merged in,
which case of a figure this profile ran, and the trial a figure draws."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.ledbat import metrics as lb
from analysis.ledbat.claims import Cells
from analysis.report.paper_run import PaperRun, style

__all__ = ["Run", "style"]


class Run(PaperRun):
    """One profile's LEDBAT results."""

    @classmethod
    def load(cls, profile: str, results: Path, out: Path) -> Run:   # type: ignore[override]
        run = super().load("ledbat", profile, results, out)
        run.cells = lb.ledbat_cells(results, run.cells)
        return run

    def by_key(self) -> Cells:
        return Cells.from_cells(self.cells, self.params)

    def figure_case(self, spec: dict[str, Any]) -> str | None:
        """The first of a figure's cases that this run measured for any of its variants."""
        return self.by_key().first_case(tuple(spec["ccs"]), spec["cases"])

    def median_trial(self, cc: str, case: str) -> Path | None:
        cell_id = f"{cc}-{case}"
        return lb.median_trial(self.results, cell_id, self.cells.get(cell_id))

    def profile_cells(self) -> list[str]:
        return [c.cell_id for c in self.cfg.cells(self.profile)]
