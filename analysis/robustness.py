"""Every claim's verdict under each alternative of the paper's open choices, one choice flipped at a
time (configuration/choices.py, docs/robustness.md).

Under an alternative, the paper's own analysis judges an overlay of the results: each cell the
alternative touches is replaced by the cell measured under it (its twin, or the matrix cell with the
same scenario), every other cell is the reference's own. A touched cell not yet measured is left out,
so a claim that reads it comes out "not evaluated" there: not run, never "robust" by default.

    python -m analysis.robustness --paper P --profile full [--results DIR] [--out FILE]
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from configuration import CHECKOUT
from configuration.choices import Alternative
from configuration.load import CONFIG_DIR, PaperConfig
from experiments import load_paper

SCHEMA = "tcprepro.robustness/1"
NOT_RUN = "not evaluated"


def output_path(figures: Path, paper: str, profile: str) -> Path:
    """Beside the paper's figure folder, which its figures rule rewrites whole."""
    return figures / paper / f"{profile}-robustness.json"


def overlay(cfg: PaperConfig, results: Path, alt: Alternative | None, dest: Path) -> tuple[list[str], list[str]]:
    """Links in `dest`, one per matrix cell measured in `results`, each to the cell that stands in for
    it under `alt` (itself when untouched). Returns the measured cells the alternative touches and,
    of those, the ones whose stand-in is not measured yet (left out)."""
    dest.mkdir(parents=True, exist_ok=True)
    touched, missing = [], []
    for cell_id in cfg.cells_by_id:
        if not (results / cell_id / "cell.json").exists():
            continue                     # not measured: its claims are not evaluated in the reference either
        source = alt.twins.get(cell_id, cell_id) if alt else cell_id
        if source != cell_id:
            touched.append(cell_id)
            if not (results / source / "cell.json").exists():
                missing.append(cell_id)
                continue
        (dest / cell_id).symlink_to((results / source).resolve(), target_is_directory=True)
    return touched, missing


def verdicts_in(paper: str, profile: str, results: Path) -> dict[str, tuple[str, set[str]]]:
    """{claim: (verdict, the comparisons it lacks data for)} of the paper's analysis over a results
    folder (no figure drawn)."""
    run_mod = importlib.import_module(f"analysis.{paper}.run")
    verdict_mod = importlib.import_module(f"analysis.{paper}.verdict")
    with tempfile.TemporaryDirectory(prefix="tcprepro-robustness-") as out:
        run = run_mod.Run.load(profile, results, Path(out))
        return {v.claim: (v.verdict, set(v.missing)) for v in verdict_mod.verdicts(run)}


def comparable(reference: dict[str, tuple[str, set[str]]],
               under: dict[str, tuple[str, set[str]]]) -> tuple[dict[str, str], list[str]]:
    """The verdicts under an alternative that can be set beside the reference's, and the claims that
    cannot: a claim lacking data under the alternative that it had in the reference (a touched cell
    not measured yet) is judged on less, so its verdict there is "not evaluated", not a flip."""
    out, incomplete = {}, []
    for claim, (verdict, missing) in under.items():
        if missing - reference.get(claim, ("", set()))[1]:
            incomplete.append(claim)
            verdict = NOT_RUN
        out[claim] = verdict
    return out, incomplete


def judge(paper: str, profile: str, results: Path) -> dict[str, Any]:
    """The reference's verdicts and each alternative's, with what each alternative still lacks."""
    cfg = load_paper(CONFIG_DIR / f"{paper}.yaml")
    with tempfile.TemporaryDirectory(prefix="tcprepro-overlay-") as tmp:
        ref_dir = Path(tmp) / "reference"
        overlay(cfg, results, None, ref_dir)
        reference = verdicts_in(paper, profile, ref_dir)
        alts = []
        for alt in cfg.alternatives:
            where = Path(tmp) / alt.key
            touched, missing = overlay(cfg, results, alt, where)
            verdicts, incomplete = comparable(reference, verdicts_in(paper, profile, where))
            alts.append({"choice": alt.choice, "alternative": alt.alternative, "reading": alt.reading,
                         "favoured": alt.favoured, "touched": len(touched), "not_measured": sorted(missing),
                         "incomplete": incomplete, "verdicts": verdicts})
    return {"schema": SCHEMA, "paper": paper, "profile": profile,
            "reference": {c: v for c, (v, _) in reference.items()}, "alternatives": alts}


def flips(doc: dict[str, Any], claim: str) -> list[dict[str, Any]]:
    """The alternatives under which the claim's verdict differs from the reference's (a claim not
    evaluated under an alternative is not a flip: it was not run)."""
    ref = doc["reference"][claim]
    return [a for a in doc["alternatives"] if a["verdicts"].get(claim, NOT_RUN) not in (ref, NOT_RUN)]


def not_run(doc: dict[str, Any], claim: str) -> list[dict[str, Any]]:
    """The alternatives whose cells for this claim are not all measured yet."""
    if doc["reference"][claim] == NOT_RUN:
        return []
    return [a for a in doc["alternatives"] if a["verdicts"].get(claim, NOT_RUN) == NOT_RUN]


def summary(doc: dict[str, Any], claim: str) -> str:
    """robust (the same verdict under every alternative), depends on <choices>, or not yet run."""
    flipped = sorted({a["choice"] for a in flips(doc, claim)})
    if flipped:
        return "depends on " + ", ".join(flipped)
    if doc["reference"][claim] == NOT_RUN:
        return NOT_RUN
    missing = not_run(doc, claim)
    return f"not yet run under {len(missing)} of {len(doc['alternatives'])}" if missing else "robust"


def key(alt: dict[str, Any]) -> str:
    return f"{alt['choice']}.{alt['alternative']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.robustness", description=__doc__.split("\n")[0])
    ap.add_argument("--paper", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--results", type=Path, help="the paper's results (default: results/<profile>/<paper>)")
    ap.add_argument("--out", type=Path, help="default: figures/<paper>/<profile>-robustness.json")
    a = ap.parse_args(argv)
    results = a.results or CHECKOUT / "results" / a.profile / a.paper
    if not results.is_dir():
        print(f"error: no results in {results}: run the workflow first", file=sys.stderr)
        return 2
    doc = judge(a.paper, a.profile, results)
    out = a.out or output_path(CHECKOUT / "figures", a.paper, a.profile)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(doc, indent=1) + "\n")
    partial.replace(out)
    counts = [summary(doc, c) for c in doc["reference"]]
    print(f"{out}: {len(doc['alternatives'])} alternatives; claims robust: {counts.count('robust')} of {len(counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
