"""Re-judge a committed result set whose raw trials are not archived: its claims under the current
verdict rule and claim list, from its committed tables alone.

`python -m analysis.report.rejudge figures/<paper>/<profile> ...` rewrites verdicts.json and the claims of
verdict.md; its tables, figures and other sections stay as the run left them. A committed table
holds each cell's statistic but not its trials' values, so no comparison has a noise estimate and
none can hold or fail: the verdicts say what could not be judged and why, until the trials are run
again and archived (data/<profile>/<paper>/). A result set whose trials are archived is refused:
restore them and regenerate it whole (data/README.md).
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

from analysis import resultset
from analysis.report import claims_markdown
from analysis.verdicts import Verdict
from archive import trials as archive
from configuration.load import CONFIG_DIR, PaperConfig
from experiments import load_paper

CLAIM_SECTIONS = ("Claims", "The paper's claims", "Beyond the paper")


def archived(paper: str, profile: str, data: Path | None = None) -> int:
    """How many trials of a paper's profile data/ holds (0: none archived)."""
    manifest = archive.paper_dir(profile, paper, data) / archive.MANIFEST
    return len(json.loads(manifest.read_text())) if manifest.exists() else 0


def archive_folder(paper: str, profile: str) -> str:
    """Where a paper's archived trials of a profile go, as the checkout names it (data/full/<paper>/)."""
    return archive.paper_dir(profile, paper).relative_to(archive.DATA.parent).as_posix() + "/"


def cells_from_tables(root: Path, cfg: PaperConfig) -> dict[str, dict[str, Any]]:
    """Cells as the committed tables give them: per cell its valid trials and, per metric a table
    column compares on its mean, that mean (no trial values)."""
    cells: dict[str, dict[str, Any]] = {}
    for tid, spec in cfg.data["reference"].get("tables", {}).items():
        path = root / f"{tid}.csv"
        if not path.exists():
            continue
        with path.open() as fh:
            for row in csv.DictReader(fh):
                n = int(row.get("n_valid") or 0)
                if not n:
                    continue
                cell = cells.setdefault(row["cell"], {"n_valid": n, "expected_trials": None, "metrics": {}})
                for col, c in spec["columns"].items():
                    value = row.get(f"{col}_measured")
                    if c["stat"] == "mean" and value not in (None, ""):
                        cell["metrics"][c["metric"]] = {"mean": float(value), "n": n}
    return cells


def rewrite_verdict_md(text: str, verdicts: list[Any], notice: str) -> str:
    """verdict.md with its claim sections replaced by the new ones (where the first of them stood),
    its scorecard sentence updated and the notice under the title; the rest as it was."""
    head, *sections = re.split(r"(?m)^(?=## )", text)
    kept: list[str] = []
    at: int | None = None
    for s in sections:
        title = s.splitlines()[0][3:].strip()
        if title in CLAIM_SECTIONS:
            at = len(kept) if at is None else at
        else:
            kept.append(s)
    new = "\n".join(claims_markdown.section(verdicts)) + "\n"
    kept.insert(len(kept) if at is None else at, new)
    score = claims_markdown.scorecard(claims_markdown.paper_claims(claims_markdown.as_dicts(verdicts)))
    head = re.sub(r"(The paper's claims|The report's claims|Claims): [^.]*\.", f"The paper's claims: {score}.", head)
    title, _, rest = head.partition("\n")
    rest = re.sub(r"\n\*\*Re-judged from the committed tables.*?\n\n", "\n", rest, flags=re.S)
    return f"{title}\n\n{notice}{rest}" + "".join(kept)


def _tables_only(v: Verdict) -> Verdict:
    """Read back from its tables, a result set cannot tell a metric it never measured from one its
    tables do not hold: the verdict says so."""
    either = "not measured, or not in the committed tables"
    v.missing = [re.sub(r": not measured$", f": {either}", m) for m in v.missing]
    v.why = v.why.replace("not measured (", f"{either} (")
    return v


def rejudge(root: Path) -> list[Path]:
    rs = resultset.load(root)
    if archived(rs.paper, rs.profile):
        raise SystemExit(f"{root}: its raw trials are archived in {archive_folder(rs.paper, rs.profile)}: restore them "
                         f"(`python -m tcprepro archive restore --profile {rs.profile} --paper {rs.paper}`) and "
                         "regenerate the result set whole")
    cfg = load_paper(CONFIG_DIR / f"{rs.paper}.yaml")
    evaluate = importlib.import_module(f"analysis.{rs.paper}.claims").evaluate
    verdicts = [_tables_only(v) for v in evaluate(cells_from_tables(root, cfg), cfg, rs.profile)]
    (root / "verdicts.json").write_text(json.dumps([v.as_dict() for v in verdicts], indent=1) + "\n")
    notice = (f"**Re-judged from the committed tables: the raw trials of this run are not archived "
              f"(data/{rs.profile}/{rs.paper}/ holds none).** Its tables, figures and the sections below the "
              "claims are as the run left them; the claims were judged again under the current rule and "
              "claim list (docs/verdicts.md) from the tables alone, which keep each cell's statistic but not "
              "its trials' values, so no comparison has a noise estimate (and metrics outside the tables, such as "
              "queue-full events and retransmissions, are not in them at all).\n")
    md = root / "verdict.md"
    md.write_text(rewrite_verdict_md(md.read_text() if md.exists() else "# verdict\n", verdicts, notice))
    return [root / "verdicts.json", md]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.report.rejudge", description=__doc__.split("\n")[0])
    ap.add_argument("result_sets", nargs="+", type=Path, help="figures/<paper>/<profile>/ directories")
    a = ap.parse_args(argv)
    for root in a.result_sets:
        for p in rejudge(root):
            print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
