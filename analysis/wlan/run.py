"""What every 802.11b figure reads: the run's cells indexed by (scenario, variant, Q, M_t), the
paper's figure definitions, one palette for AP buffers and one for scenarios, and a caption naming
where each figure came from."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.report.paper_run import PaperRun
from analysis.wlan.claims import Cells

# One colour per AP buffer (packets) and per scenario, the same in every figure.
Q_COLOURS = {5: "#8c564b", 10: "#d62728", 25: "#ff7f0e", 50: "#2ca02c", 100: "#1f77b4", 200: "#9467bd",
             1000: "#17becf"}
SCEN_COLOURS = {"dl1-ul1": "#1f77b4", "dl2-ul2": "#ff7f0e", "dl4-ul4": "#2ca02c", "dl4-ul1": "#9467bd",
                "dl1-ul4": "#8c564b"}
VARIANT_STYLE = {"fifo": {"color": "#7f7f7f", "marker": "s", "label": "FIFO"},
                 "dataack": {"color": "#1f77b4", "marker": "o", "label": "DATA/ACK WRR 2:1"},
                 "adaptive": {"color": "#d62728", "marker": "^", "label": "adaptive 2 N_down : N_up"},
                 "dataack-ackq200": {"color": "#bcbd22", "marker": "v", "label": "DATA/ACK, ACK queue 200"},
                 "dataack-ackq400": {"color": "#17becf", "marker": "P", "label": "DATA/ACK, ACK queue 400"},
                 "dataack-ackq1000": {"color": "#2ca02c", "marker": "D", "label": "DATA/ACK, ACK queue 1000"},
                 "fifo-bic": {"color": "#9467bd", "marker": "^", "label": "FIFO, BIC"},
                 "fifo-delack200": {"color": "#8c564b", "marker": "v", "label": "FIFO, delayed-ACK timer 200 ms"},
                 "fifo-macq8": {"color": "#e377c2", "marker": "P", "label": "FIFO, TX ring of 8 frames"},
                 "fifo-fer5": {"color": "#d62728", "marker": "D", "label": "FIFO, 5 % channel frame errors"},
                 "fifo-capture": {"color": "#17becf", "marker": "X", "label": "FIFO, capture (stations 5 m out)"},
                 "fifo-streams": {"color": "#ff7f0e", "marker": "o", "label": "FIFO, a stream per cell"},
                 "dataack-streams": {"color": "#ff7f0e", "marker": "o", "label": "DATA/ACK, a stream per cell"}}


class Run(PaperRun):
    """One profile's 802.11b results."""

    @classmethod
    def load(cls, profile: str, results: Path, out: Path) -> Run:   # type: ignore[override]
        return super().load("wlan", profile, results, out)

    def index(self) -> Cells:
        return Cells.from_cells(self.cells, self.params)

    def trials_per_cell(self) -> str:
        ns = sorted({c.get("n_valid", 0) for c in self.cells.values()})
        return "/".join(str(n) for n in ns) or "0"

    def caption(self, fig: Any, drawn_by: str, cells: str) -> None:
        """Where the figure came from: the profile, the cells, the trials behind each point, the code
        (`drawn_by`: a function of plots.py, or module.function of another module here)."""
        module, _, func = drawn_by.rpartition(".")
        fig.text(0.01, -0.02, f"{self.profile} profile; cells {cells}; {self.trials_per_cell()} valid trial(s) per "
                 f"cell (points: trimmed mean, bars: smallest to largest trial); analysis/wlan/{module or 'plots'}.py "
                 f"{func}", fontsize=6, color="#555555", va="top")

    def first_trial(self, prefer: list[str]) -> Path | None:
        """A valid trial of the first preferred cell-id prefix that was run (for the drawings)."""
        for prefix in prefer:
            for cell_id in sorted(self.cells):
                if cell_id.startswith(prefix):
                    trials = self.valid_trials(cell_id)
                    if trials:
                        return trials[0]
        return None


def fit_lines(claim: dict[str, Any]) -> list[str]:
    """An investigation that swept parameters towards the paper's numbers, named as a fit: what was
    swept, over what, and the paper's words against the fitted values (the claim's `investigation.fit`)."""
    fit = (claim.get("investigation") or {}).get("fit")
    if not fit:
        return []
    return [f"**This is a fit, not an explanation.** Fitted: {' '.join(fit['parameters'].split())}. Tried: "
            f"{' '.join(fit['tried'].split())}. Against the fitted values: {' '.join(fit['against'].split())}", ""]


def q_colour(q: int) -> str:
    return Q_COLOURS.get(q, "#333333")
