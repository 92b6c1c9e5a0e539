"""What every collateral figure reads: the run's cells (analysis/report/paper_run.py), with the OWD band
densities (analysis/collateral/owd_bands.py) and H-TCP's time in NewReno mode
(analysis/collateral/modes.py) that the claims name merged in, and the paper's axes."""
from __future__ import annotations

from pathlib import Path

from analysis.collateral import modes, owd_bands
from analysis.report.paper_run import PaperRun, claims_of, style

__all__ = ["CCS", "FLOWS", "RTTS", "Run", "style"]

CCS = ("newreno", "htcp", "cubic")
FLOWS = (1, 2, 5)
RTTS = (50, 100)


class Run(PaperRun):
    """One profile's collateral results."""

    @classmethod
    def load(cls, profile: str, results: Path, out: Path) -> Run:   # type: ignore[override]
        run = super().load("collateral", profile, results, out)
        bands = owd_bands.claim_bands(claims_of(run.cfg, profile))
        run.cells = owd_bands.with_band_metrics(results, run.cells, bands)
        windows = modes.claim_windows(claims_of(run.cfg, profile))
        run.cells = modes.with_mode_share(results, run.cells, windows, run.params)
        return run

    def cell_id(self, cc: str, rtt: int, flows: int) -> str:
        return f"{cc}-rtt{rtt}-f{flows}"
