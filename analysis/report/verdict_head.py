"""The opening every paper's verdict.md shares: title, what was measured, the claims' scorecard, then
what the run lacks and what changed since it ran, so a reader sees how far to trust it first."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from analysis.report import claims_markdown
from analysis.report.paper_run import PaperRun, incomplete_lines, trial_counts
from analysis.report.provenance import config_check, stale_lines


def verdict_head(run: PaperRun, claims: Sequence[Any], title: str, cells: str, whose: str = "paper",
                 note: Sequence[str] = ()) -> list[str]:
    """cells: what was measured ("Cells measured: 3 of 18"); note: lines between the scorecard and
    the run's gaps (e.g. what the testbed is)."""
    n_valid, expected = trial_counts(run)
    card = claims_markdown.scorecard(claims_markdown.paper_claims(claims_markdown.as_dicts(list(claims))))
    return [f"# {title}: reproduction verdict ({run.profile} profile)", "",
            f"{cells}; valid trials {n_valid} of {expected}. The {whose}'s claims: {card}.", "",
            *note, *incomplete_lines(run), *stale_lines(config_check(run))]
