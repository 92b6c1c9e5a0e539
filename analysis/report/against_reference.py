"""Compare a run's result sets with the reference results committed in this checkout.

The reference for a profile is figures/<paper>/full/ (the committed full run) or
figures/<paper>/smoke-reference/ (the committed smoke run CI checks against); quick has none. Used
after a docker run (docker/entrypoint) and by `tcprepro diff`. The check (`--check`, CI's
regression check) fails on a changed verdict and on a number the run did not measure: a run whose
trials were all invalid has no numbers, and its verdicts, all "not evaluated", would otherwise pass.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis import resultset, resultset_diff, staleness
from configuration import CHECKOUT
from configuration.load import CONFIG_DIR, NOT_PAPERS, ConfigError, PaperConfig
from experiments import load_paper

REFERENCE_NAMES = {"full": "full", "smoke": "smoke-reference"}


def compare(a_path: Path | str, b_path: Path | str) -> resultset_diff.Diff:
    """Diff result set a against b, or against its paper's own numbers when b is `paper`; either side
    built from trials the paper's config no longer describes is named (analysis/staleness.py)."""
    a = resultset.load(a_path)
    b = resultset.paper_side(a) if str(b_path) == "paper" else resultset.load(b_path)
    cfg = load_paper(CONFIG_DIR / f"{a.paper}.yaml")
    tolerances = resultset_diff.tolerances(cfg.data.get("reference", {}), a.profile)
    out = resultset_diff.diff(a, b, tolerances, str(a_path), str(b_path))
    for label, rs in ((str(a_path), a), (str(b_path), b)):
        lines = staleness.result_set_lines(rs.provenance, f"config/{a.paper}.yaml", cfg.sha256,
                                           current_spec(cfg, rs.profile))
        out.stale += [f"{label}: {line}" for line in lines]
    return out


def current_spec(cfg: PaperConfig, profile: str) -> Callable[[str], dict[str, Any] | None]:
    """What the paper's config now gives a cell's trials (None: no such cell or profile)."""
    def spec(cell_id: str) -> dict[str, Any] | None:
        try:
            return cfg.trial_spec(cell_id, 1, profile)
        except (ConfigError, KeyError):
            return None
    return spec


def reference_dir(paper: str, profile: str, root: Path = CHECKOUT / "figures") -> Path | None:
    name = REFERENCE_NAMES.get(profile)
    d = root / paper / name if name else None
    return d if d is not None and (d / "verdicts.json").exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.report.against_reference", description=__doc__.split("\n")[0])
    ap.add_argument("--profile", required=True)
    ap.add_argument("--figures", type=Path, default=CHECKOUT / "figures", help="the run's figures folder")
    ap.add_argument("--references", type=Path, default=CHECKOUT / "figures",
                    help="where the committed references are (default: this checkout's figures/)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a claim's verdict changed or the run lacks a number the reference has")
    a = ap.parse_args(argv)
    status = 0
    papers = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if p.stem not in NOT_PAPERS)
    for paper in papers:
        run, ref = a.figures / paper / a.profile, reference_dir(paper, a.profile, a.references)
        if not (run / "verdicts.json").exists():
            continue
        if ref is None:
            print(f"{paper}: no committed {a.profile} reference to compare with; "
                  f"`python -m tcprepro diff {run} paper` compares with the paper's own numbers")
            continue
        if run.resolve() == ref.resolve():
            print(f"{paper}: this run wrote the committed reference itself; `git diff {ref}` shows what moved")
            continue
        try:
            result = compare(run, ref)
        except (resultset.ResultSetError, ConfigError, ValueError) as exc:
            print(f"error: {paper}: {exc}", file=sys.stderr)
            return 2
        print(f"## {paper}: this run ({run}) against the committed reference ({ref})")
        print(result.render(), end="")
        if result.missing_in_a:
            # A verdict left "not evaluated" by a run without numbers would compare equal: say why.
            print(f"{paper}: this run lacks {len(result.missing_in_a)} numbers the reference has "
                  f"(an invalid or missing trial: see its cell's provenance.json)")
        status = max(status, result.exit_code(complete=True) if a.check else 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
