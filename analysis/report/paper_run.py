"""A paper's run as its analysis package draws it (PaperRun: a profile's cells, the paper's config,
where the outputs go), `python -m analysis.<paper>` (figures_main), and what every paper's figures
and verdict read from it: the algorithms' styles, the facts the trials' provenance records (kernel,
where they ran, each algorithm's code), the claims and verdict files."""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from analysis import aggregate
from analysis.paper_tables import load_cells
from cc.registry import entry
from configuration import CHECKOUT
from configuration.load import CONFIG_DIR, PROFILES, PaperConfig
from experiments import load_paper


@dataclass
class PaperRun:
    """One profile's results of one paper: cells by id, the config, where its figures go."""

    profile: str
    results: Path                    # results/<profile>/<paper>
    out: Path                        # figures/<paper>/<profile>
    cfg: PaperConfig
    cells: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, paper: str, profile: str, results: Path, out: Path) -> Any:
        out.mkdir(parents=True, exist_ok=True)
        # The paper's own config, whatever TCPREPRO_PAPER_DIR says: its reference numbers are the point.
        # Only its matrix's cells: an open choice's twins (configuration/choices.py) stand in for
        # them in analysis/robustness.py's overlays, never beside them.
        cfg = load_paper(CONFIG_DIR / f"{paper}.yaml")
        cells = {k: v for k, v in load_cells(results).items() if k in cfg.cells_by_id}
        return cls(profile, results, out, cfg, cells)

    @property
    def params(self) -> dict[str, dict[str, Any]]:
        return {cid: c.params for cid, c in self.cfg.cells_by_id.items()}

    @property
    def reference(self) -> dict[str, Any]:
        return self.cfg.data["reference"]

    def valid_trials(self, cell_id: str) -> list[Path]:
        """Trial directories of a cell whose summary says valid, in trial order."""
        cell = self.cells.get(cell_id)
        if not cell:
            return []
        return [self.results / cell_id / f"trial-{k}" for k in cell.get("trials", [])]

    def save(self, fig: Any, name: str) -> list[Path]:
        """PNG for reading, PDF for papers; the PDF carries no timestamps so reruns diff clean."""
        paths = [self.out / f"{name}.png", self.out / f"{name}.pdf"]
        fig.savefig(paths[0], dpi=150, bbox_inches="tight")
        fig.savefig(paths[1], bbox_inches="tight", metadata={"CreationDate": None, "ModDate": None})
        # Deferred on purpose: the reports, status and rejudge import this module without drawing,
        # and pyplot adds about half a second to every such import (its backend, the font cache).
        import matplotlib.pyplot as plt
        plt.close(fig)
        return paths


def style(cc: str) -> dict[str, str]:
    e = entry(cc)
    return {"label": e["label"], "color": e["color"], "marker": e["marker"]}


def cc_label(cc: str) -> str:
    """An algorithm's display label, the registry's (config/congestion_controls.yaml), as every
    figure's legend shows it."""
    return str(entry(cc)["label"])


def provenance_facts(run: PaperRun) -> dict[str, Any]:
    """Over the valid trials: kernels, where they ran, each algorithm's implementation, idle RTTs."""
    kernels: Counter[str] = Counter()
    impls: dict[str, set[str]] = {}
    where: Counter[str] = Counter()
    calib: list[float] = []
    for cell_id in run.cells:
        for trial in run.valid_trials(cell_id):
            prov_path = trial / "provenance.json"
            if not prov_path.exists():
                continue
            prov = json.loads(prov_path.read_text())
            k = prov.get("kernel", {})
            kernels[k.get("release", "?")] += 1
            where[f"{k.get('where')}/{k.get('accel') or 'native'}"] += 1
            for cc in prov.get("congestion_controls", {}).values():
                impls.setdefault(cc["name"], set()).add(
                    f"{cc['impl']} {cc['kernel_name']} {json.dumps(cc.get('params') or {}, sort_keys=True)}")
            rounds = prov.get("calibration", {}).get("rounds") or []
            if rounds:
                calib.append(rounds[-1]["base_rtt_ms"])
    return {"kernels": kernels, "impls": impls, "where": where, "calib": calib}


def config_hz(release: str) -> str | None:
    """CONFIG_HZ of a kernel release from its /boot config (the VM's kernel is the host's package)."""
    config = Path(f"/boot/config-{release}")
    if not config.exists():
        return None
    line = next((ln for ln in config.read_text().splitlines() if ln.startswith("CONFIG_HZ=")), None)
    return line.split("=", 1)[1] if line else None


def trial_counts(run: PaperRun) -> tuple[int, int]:
    """Valid trials and planned trials over the run's cells."""
    return (sum(c.get("n_valid", 0) for c in run.cells.values()),
            sum(c.get("expected_trials", 0) for c in run.cells.values()))


def claims_of(cfg: PaperConfig, profile: str) -> list[dict[str, Any]]:
    """The paper's claims as its config states them. A claim's `why` explains the verdict of the
    committed full reference run: it goes with that profile's verdicts only."""
    claims = cfg.data["reference"]["claims"]
    return claims if profile == "full" else [{k: v for k, v in c.items() if k != "why"} for c in claims]


def incomplete_lines(run: PaperRun) -> list[str]:
    """The cells with fewer valid trials than planned, if any (their statistics use what there is)."""
    short = [f"{cid} ({c.get('n_valid', 0)}/{c.get('expected_trials')})"
             for cid, c in sorted(run.cells.items()) if not c.get("complete")]
    return [f"Cells with fewer valid trials than planned (their statistics use what there is): "
            f"{', '.join(short)}.", ""] if short else []


def robustness_lines(run: PaperRun) -> list[str]:
    """The claims' verdicts under the open choices' alternatives, when this profile has them."""
    from analysis.report import robustness_table  # it imports the analysis that imports this module
    doc = robustness_table.load(run.out.parent.parent, run.cfg.name, run.profile)
    return robustness_table.lines(doc) if doc else []


def _words(paper: str) -> str:
    return "The paper is silent." if paper == "the paper is silent" else f'The paper: "{paper}"'


def choices_lines(run: PaperRun) -> list[str]:
    """What the paper leaves open and what config/<paper>.yaml chose, with the reasons, the paper's
    words for it, and the alternatives the robustness runs flip it to."""
    out = []
    for c in run.reference["choices"]:
        out.append(f"- **{c['what']}**: {c['choice']}. {c['why']}" + (f" {_words(c['paper'])}" if "paper" in c else ""))
        for alt in c.get("alternatives", []):
            out.append(f"  - alternative `{c['id']}.{alt['id']}`: {alt['reading']}. {_words(alt['paper'])} "
                       + ("The text favours it at least as much as the reading taken."
                          if alt["favoured"] else "The text favours the reading taken."))
    return out


def this_run_lines(facts: dict[str, Any], bottleneck: str, paper_hz: int | None = None) -> list[str]:
    """The 'this run' half of a verdict's testbed comparison: kernels, where, HZ, idle RTT, each
    algorithm's implementation (from `provenance_facts`)."""
    out = [f"- This run: kernel {', '.join(f'{k} ({n} trials)' for k, n in facts['kernels'].items()) or '-'}, "
           f"measured in {', '.join(f'{k} ({n})' for k, n in facts['where'].items()) or '-'}; {bottleneck}"]
    for release in facts["kernels"]:
        hz = config_hz(release)
        if hz:
            out.append(f"- Kernel {release}: CONFIG_HZ={hz}" + (f" (the paper's: {paper_hz} Hz)." if paper_hz else "."))
    if facts["calib"]:
        out.append(f"- Idle base RTT after calibration: {min(facts['calib']):.2f} to {max(facts['calib']):.2f} ms.")
    out += [f"- {name}: {'; '.join(sorted(impls))}" for name, impls in sorted(facts["impls"].items())]
    return out


def figures_main(paper: str, load: Callable[[str, Path, Path], PaperRun],
                 parts: Sequence[Callable[[Any], list[Path]]], doc: str, argv: list[str] | None = None) -> int:
    """`python -m analysis.<paper> --profile P`: every part of a paper (a function of the loaded run
    that returns the files it wrote) from results/<P>/<paper> into figures/<paper>/<P>/, each part's
    files printed."""
    ap = argparse.ArgumentParser(prog=f"python -m analysis.{paper}", description=" ".join(doc.split("\n\n")[0].split()))
    ap.add_argument("--profile", required=True, help="the results' profile: smoke, quick, full, ...")
    ap.add_argument("--results", type=Path, help=f"the paper's results folder (default: results/<profile>/{paper})")
    ap.add_argument("--out", type=Path, help=f"where the outputs go (default: figures/{paper}/<profile>)")
    a = ap.parse_args(argv)
    results = a.results or CHECKOUT / "results" / a.profile / paper
    if not results.is_dir():
        print(f"error: no results in {results}: run the workflow first (make quick)", file=sys.stderr)
        return 2
    # a profile of the config's (a test's own profile name has no cell list to hold it to)
    listed = load_paper(CONFIG_DIR / f"{paper}.yaml").cells(a.profile) if a.profile in PROFILES else []
    unaggregated = aggregate.unaggregated(results, [c.cell_id for c in listed])
    if unaggregated:
        # e.g. trials just restored from data/: drawn now, these cells would count as not run and
        # overwrite a committed reference's figures and verdicts with empty ones
        n = len(unaggregated)
        print(f"error: {n} cell{'s' if n != 1 else ''} of profile {a.profile} in {results} "
              f"{'have' if n != 1 else 'has'} trials but no cell.json "
              f"({', '.join(unaggregated[:3])}{', ...' if len(unaggregated) > 3 else ''}): aggregate them "
              f"first with the workflow (snakemake --cores all --config profile={a.profile} 'papers=[{paper}]', "
              f"which also draws these outputs)", file=sys.stderr)
        return 2
    run = load(a.profile, results, a.out or CHECKOUT / "figures" / paper / a.profile)
    for part in parts:
        written = part(run)
        name = f"{part.__module__.rsplit('.', 1)[-1]}.{part.__name__}"
        print(f"{name}: " + (", ".join(p.name for p in written) if written else "nothing to draw (cells not run)"))
    return 0


def flow_tool(trial: Path, flow_id: str) -> str | None:
    """The program a flow's own logs name (iperf3's JSON, iperf2's CSVs); None when it left neither."""
    if (trial / f"iperf-{flow_id}.json").exists():
        return "iperf3"
    return "iperf2" if any(trial.glob(f"iperf2-{flow_id}-*")) else None


def bulk_tool(trial: Path, flow_ids: Sequence[str]) -> str:
    """What ran a trial's bulk flows, as a figure names it: each flow's logs, else the generator the
    trial's provenance records, else "?"; never a default, so a label always says what ran."""
    prov = trial / "provenance.json"
    recorded = read_json(prov).get("bulk_generator") if prov.exists() else None
    return "/".join(sorted({flow_tool(trial, f) or recorded or "?" for f in flow_ids})) or "?"


def read_json(path: Path) -> dict[str, Any]:
    """One of a trial's JSON files (spec, provenance, a model's raw output) as a dict."""
    return dict(json.loads(path.read_text()))


def write_verdict(run: PaperRun, claims: list[Any], text: str) -> list[Path]:
    """verdict.md (for people) and verdicts.json (for `tcprepro diff` and the report)."""
    path = run.out / "verdict.md"
    path.write_text(text)
    (run.out / "verdicts.json").write_text(json.dumps([v.as_dict() for v in claims], indent=1) + "\n")
    return [path, run.out / "verdicts.json"]
