"""What every Westwood figure reads: the run's cells (analysis/report/paper_run.py), the report's tests, and
one trial's cwnd/ssthresh series."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis import claims_input
from analysis.aggregate import trimmed_stats
from analysis.metrics import probe_for_flow
from analysis.parsers import read_iperf, read_tcp_probe
from analysis.report.paper_run import PaperRun, style
from analysis.westwood import claims as ww
from analysis.westwood import metrics as wm

__all__ = ["CCS", "TESTS", "Run", "Series", "add_cwnd_range", "cwnd_range", "series", "style"]

CCS = ww.CCS
TESTS = ("t1", "t2", "t3")


class Run(PaperRun):
    """One profile's Westwood results."""

    @classmethod
    def load(cls, profile: str, results: Path, out: Path) -> Run:   # type: ignore[override]
        run = super().load("westwood", profile, results, out)
        add_cwnd_range(run.cells, results)
        return run

    def cells_by_cc(self) -> ww.Cells:
        return ww.Cells.from_cells(self.cells, self.params)

    def median_trial(self, cc: str, cond: str) -> Path | None:
        cell_id = f"{cc}-{cond}"
        return wm.median_trial(self.results, cell_id, self.cells.get(cell_id))


@dataclass
class Series:
    """One trial's bulk flow as tcp_probe saw it, on the trial's clock (0 = traffic start)."""

    trial: Path
    probe: pd.DataFrame             # every tcp_probe line of the flow
    t: np.ndarray
    cwnd: np.ndarray
    ssthresh: np.ndarray            # NaN while unset (the kernel's "infinite")


def series(trial: Path) -> Series:
    prov = json.loads((trial / "provenance.json").read_text())
    port = prov["endpoints"]["bulk0"]["port"]
    # iperf3's control connection shares the port: keep the data socket's (its JSON names it)
    iperf = trial / "iperf-bulk0.json"
    sports = read_iperf(iperf).local_ports if iperf.exists() else None
    probe = probe_for_flow(read_tcp_probe(trial / "tcp_probe.trace").frame, port, sports or None)
    t = probe["t"].to_numpy(float) - float(prov["t0_monotonic"])
    ss = probe["ssthresh"].to_numpy(float)
    ss[ss >= ww.INFINITE_SSTHRESH] = np.nan
    return Series(trial, probe, t, probe["snd_cwnd"].to_numpy(float), ss)


def cwnd_range(trial: Path) -> float | None:
    """The report's oscillation, "the difference between the highest and the lowest value in a
    single experiment": cwnd's max - min (packets) over the flow's whole tcp_probe series; a compact
    twin's from its claims-input.json (analysis/claims_input.py); None without either. Read once per
    trial and process: the robustness overlays (analysis/robustness.py) reach one trial under
    several names."""
    return _cwnd_range(trial.resolve())


@functools.cache
def _cwnd_range(trial: Path) -> float | None:
    if not claims_input.has_raw(trial):
        value = claims_input.stored(trial, "cwnd_range")
        return None if value is None else float(value)
    if not (trial / "provenance.json").exists():
        return None
    cwnd = series(trial).cwnd
    return float(cwnd.max() - cwnd.min()) if len(cwnd) else None


def add_cwnd_range(cells: dict[str, dict[str, Any]], results: Path) -> None:
    """Each cell's `ww.CWND_RANGE` per valid trial (`cwnd_range`), aggregated as cell.json
    aggregates a summary metric (trials, values, trimmed statistics); a cell that already has it,
    or whose trials have neither a trace nor a claims input, is left as it is."""
    for cell_id, cell in cells.items():
        metrics = cell.setdefault("metrics", {})
        if ww.CWND_RANGE in metrics:
            continue
        pairs = [(k, v) for k in cell.get("trials", [])
                 if (v := cwnd_range(results / cell_id / f"trial-{k}")) is not None]
        if pairs:
            values = [v for _, v in pairs]
            metrics[ww.CWND_RANGE] = {"trials": [k for k, _ in pairs], "values": values, **trimmed_stats(values)}
