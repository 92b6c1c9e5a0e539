"""What every collateral figure reads: the run's cells, their parameters, the algorithms' styles."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from analysis.compare import load_cells
from cc.registry import entry
from tcprepro.config import CONFIG_DIR, PaperConfig, load_paper

CCS = ("newreno", "htcp", "cubic")
FLOWS = (1, 2, 5)
RTTS = (50, 100)


@dataclass
class Run:
    """One profile's collateral results: cells by id, the config, where figures go."""

    profile: str
    results: Path                    # results/<profile>/collateral
    out: Path                        # figures/collateral/<profile>
    cfg: PaperConfig
    cells: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, profile: str, results: Path, out: Path) -> Run:
        out.mkdir(parents=True, exist_ok=True)
        # The paper's own config, whatever TCPREPRO_PAPER_DIR says: its reference numbers are the point.
        return cls(profile, results, out, load_paper(CONFIG_DIR / "collateral.yaml"), load_cells(results))

    @property
    def params(self) -> dict[str, dict[str, Any]]:
        return {cid: c.params for cid, c in self.cfg.cells_by_id.items()}

    def cell_id(self, cc: str, rtt: int, flows: int) -> str:
        return f"{cc}-rtt{rtt}-f{flows}"

    def valid_trials(self, cell_id: str) -> list[Path]:
        """Trial directories of a cell whose summary says valid, in trial order."""
        cell = self.cells.get(cell_id)
        if not cell:
            return []
        return [self.results / cell_id / f"trial-{k}" for k in cell.get("trials", [])]

    def save(self, fig: Any, name: str) -> list[Path]:
        paths = [self.out / f"{name}.png", self.out / f"{name}.pdf"]
        fig.savefig(paths[0], dpi=150, bbox_inches="tight")
        fig.savefig(paths[1], bbox_inches="tight", metadata={"CreationDate": None, "ModDate": None})
        import matplotlib.pyplot as plt
        plt.close(fig)
        return paths


def style(cc: str) -> dict[str, str]:
    e = entry(cc)
    return {"label": e["label"], "color": e["color"], "marker": e["marker"]}
