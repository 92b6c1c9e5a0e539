"""Every claim's verdict under each alternative of the paper's open choices, one choice flipped at a
time (configuration/choices.py, docs/robustness.md).

Under an alternative, the paper's own analysis judges an overlay of the results: each cell the
alternative touches is replaced by the cell measured under it (its twin, or the matrix cell with the
same scenario), every other cell is the reference's own. A touched cell not yet measured is left out,
so a claim that reads it comes out "not evaluated" there: not run, never "robust" by default. A
matrix cell that stands in for a touched one (an investigation's cell with the choice flipped) is
not also itself: a claim that reads it sets the two readings side by side, so it is about the
choice, and under the alternative it is "compares both readings", neither run nor a flip.
The file records what the cells under each alternative ran on against the reference cells they
replace (kernel or simulator build), and the claims that read a cell whose two differ: a flip of
one of those may be the build's; the claims that read a stand-in with fewer valid trials than
planned (a trial rejected by its fidelity checks), whose verdict there rests on fewer trials; and
the claims that read a compact stand-in whose claims input other code computed (archive/compact.py),
whose verdict there is that code's reading of traces this checkout does not hold.

A second sample of the reference, where one is measured (the reference's cells again, trials 6-10:
other seeds, results/second-sample/), judges every claim that reads a re-measured cell with those
cells in place of the reference's: a claim whose verdict moves with the sample alone rests on the
sample, and its flips under an alternative are no evidence of the choice.

    python -m analysis.robustness --paper P --profile full [--results DIR] [--second-sample DIR] [--out FILE]
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from analysis import aggregate, claims_input, robustness_lane
from configuration import CHECKOUT, SECOND_SAMPLE
from configuration.choices import Alternative
from configuration.load import CONFIG_DIR, PaperConfig
from experiments import load_paper
from sim import equivalence

SCHEMA = "tcprepro.robustness/1"
NOT_RUN = "not evaluated"
ACROSS = "compares both readings"
SAMPLE = "rests on the sample"


def output_path(figures: Path, paper: str, profile: str) -> Path:
    """Beside the paper's figure folder, which its figures rule rewrites whole."""
    return figures / paper / f"{profile}-robustness.json"


def standing_in(cfg: PaperConfig, alt: Alternative) -> set[str]:
    """The paper's own cells (investigation cells) that stand in for a touched cell under `alt`."""
    return {s for ref, s in alt.twins.items() if s != ref and s in cfg.cells_by_id}


def overlay(cfg: PaperConfig, results: Path, alt: Alternative | None, dest: Path,
            leave_out: AbstractSet[str] = frozenset()) -> tuple[list[str], list[str]]:
    """Links in `dest`, one per matrix cell measured in `results`, each to the cell that stands in for
    it under `alt` (itself when untouched), but for the cells in `leave_out` and those standing in for
    a touched cell. Returns the measured cells the alternative touches and, of those, the ones whose
    stand-in is not measured yet (left out)."""
    dest.mkdir(parents=True, exist_ok=True)
    touched, missing = [], []
    skip = set(leave_out) | (standing_in(cfg, alt) if alt else set())
    for cell_id in cfg.cells_by_id:
        if not (results / cell_id / "cell.json").exists():
            continue                     # not measured: its claims are not evaluated in the reference either
        source = alt.twins.get(cell_id, cell_id) if alt else cell_id
        if cell_id in skip and source == cell_id:
            continue
        if source != cell_id:
            touched.append(cell_id)
            if not finished(results / source):
                missing.append(cell_id)
                continue
        (dest / cell_id).symlink_to((results / source).resolve(), target_is_directory=True)
    return touched, missing


def finished(cell: Path) -> bool:
    """Whether a stand-in's planned trials have all run: each valid, or rejected by its fidelity
    checks. One still being measured is not measured yet: a claim reading it is not run, not judged
    on the trials so far."""
    path = cell / "cell.json"
    if not path.exists():
        return False
    doc = json.loads(path.read_text())
    return int(doc.get("n_valid", 0)) + len(doc.get("excluded", [])) >= int(doc.get("expected_trials", 0))


def builds(results: Path, cells: Iterable[str]) -> list[str]:
    """What the cells' finished trials ran on, from their provenance: the kernel release (the lane's
    build) or, for a simulated paper, the simulator and its model's sources, named by the newest
    sources a recorded equivalence check joins them to (sim/equivalence.py): reruns showed those
    give the same output field for field, so they are one build here."""
    out = set()
    for cell_id in cells:
        for prov in (results / cell_id).glob("trial-*/provenance.json"):
            if prov.parent.name.endswith(".partial"):
                continue
            doc = json.loads(prov.read_text())
            sim = doc.get("simulator")
            out.add(f"{sim['version']} model "
                    f"{equivalence.newest_equal(Path(sim['model']).stem, sim['sources_sha256'])[:12]}" if sim
                    else doc.get("kernel", {}).get("release", "unknown"))
    return sorted(out)


def short_of_trials(results: Path, alt: Alternative, touched: list[str]) -> dict[str, str]:
    """{touched cell: "<stand-in> (n/planned)"} for the stand-ins with fewer valid trials than planned:
    a claim reading one is judged on fewer trials there than the paper's five."""
    out = {}
    for cell_id in touched:
        twin = alt.twins[cell_id]
        doc = json.loads((results / twin / "cell.json").read_text())
        if doc.get("complete") is False:
            out[cell_id] = f"{twin} ({doc.get('n_valid', 0)}/{doc.get('expected_trials')})"
    return out


def packed_elsewhere(results: Path, alt: Alternative, touched: list[str]) -> dict[str, str]:
    """{touched cell: "<stand-in> (n trials)"} for the stand-ins with compact trials (no raw traces)
    whose claims input other code than this checkout's computed: a claim reading one is judged on
    the values of the code that packed them, and measuring them again reads them with this code."""
    out = {}
    for cell_id in touched:
        twin = alt.twins[cell_id]
        n = sum(1 for t in sorted((results / twin).glob("trial-*"))
                if t.is_dir() and not t.name.endswith(".partial") and claims_input.computed_elsewhere(t))
        if n:
            out[cell_id] = f"{twin} ({n} trial{'s' * (n != 1)})"
    return out


def verdicts_in(paper: str, profile: str, results: Path) -> dict[str, tuple[str, set[str]]]:
    """{claim: (verdict, the comparisons it lacks data for, as Verdict.gaps)} of the paper's
    analysis over a results folder (no figure drawn)."""
    run_mod = importlib.import_module(f"analysis.{paper}.run")
    verdict_mod = importlib.import_module(f"analysis.{paper}.verdict")
    with tempfile.TemporaryDirectory(prefix="tcprepro-robustness-") as out:
        run = run_mod.Run.load(profile, results, Path(out))
        return {v.claim: (v.verdict, set(v.gaps)) for v in verdict_mod.verdicts(run)}


def comparable(reference: dict[str, tuple[str, set[str]]],
               under: dict[str, tuple[str, set[str]]], across: AbstractSet[str] = frozenset()
               ) -> tuple[dict[str, str], list[str]]:
    """The verdicts under an alternative that can be set beside the reference's, and the claims that
    cannot: a claim that reads both readings of the choice (`across`) compares them; one lacking data
    under the alternative that it had in the reference (a touched cell not measured yet) is judged
    on less, so its verdict there is "not evaluated", not a flip."""
    out, incomplete = {}, []
    for claim, (verdict, missing) in under.items():
        if claim in across:
            verdict = ACROSS
        elif missing - reference.get(claim, ("", set()))[1]:
            incomplete.append(claim)
            verdict = NOT_RUN
        out[claim] = verdict
    return out, incomplete


def claims_reading(cfg: PaperConfig, results: Path, cells: AbstractSet[str],
                   reference: dict[str, tuple[str, set[str]]], paper: str, profile: str, where: Path) -> set[str]:
    """The claims that read any of `cells`: the reference's own analysis without them lacks data for
    those claims."""
    cells = {c for c in cells if (results / c / "cell.json").exists()}
    if not cells:
        return set()
    overlay(cfg, results, None, where, leave_out=cells)
    return {c for c, (_, missing) in verdicts_in(paper, profile, where).items()
            if missing - reference.get(c, ("", set()))[1]}


class UnreadIsRead(Exception):
    """An alternative's `unread` cells are read by a claim: the config states what the analysis refutes."""


def unread_claims(cfg: PaperConfig, results: Path, alt: Alternative, reference: Verdicts, paper: str,
                  profile: str, where: Path) -> None:
    """Checks that no claim reads the cells the alternative leaves unmeasured (its `unread`): a claim
    that did would be "not evaluated" under it for a reason the config denies. UnreadIsRead names the
    claims and the fix."""
    read = claims_reading(cfg, results, set(alt.unread), reference, paper, profile, where)
    if read:
        raise UnreadIsRead(f"config/{paper}.yaml: {alt.key}: unread.cells are read by {', '.join(sorted(read))}; "
                           "drop those cells from `unread` so that their twins are measured")


def on_other_build(results: Path, alt: Alternative, touched: list[str],
                   memo: dict[str, list[str]] | None = None) -> list[str]:
    """The touched cells whose stand-in ran on another kernel (or simulator build) than they did
    (`memo`: each cell's builds, read once per judging)."""
    memo = {} if memo is None else memo

    def of(cell_id: str) -> list[str]:
        if cell_id not in memo:
            memo[cell_id] = builds(results, [cell_id])
        return memo[cell_id]
    return [c for c in touched if of(alt.twins[c]) != of(c)]


def second_sample_dir(results: Path) -> Path:
    """Where a paper's second sample is, beside results/<profile>/<paper>: results/second-sample/<profile>/<paper>."""
    return results.parent.parent / SECOND_SAMPLE / results.parent.name / results.name


Verdicts = dict[str, tuple[str, set[str]]]


def judge_sample(cfg: PaperConfig, results: Path, sample: Path, reference: Verdicts, sampled: Verdicts,
                 paper: str, profile: str, tmp: Path) -> dict[str, Any] | None:
    """The verdicts with the cells the second sample measured in place of the reference's (`sampled`:
    the analysis over `sample_based`); a claim that reads none of them is "not evaluated" there (not
    re-sampled), as is one that lacks data under it that it had in the reference."""
    cells = sorted(c for c in cfg.cells_by_id if finished(sample / c) and (results / c / "cell.json").exists())
    if not cells:
        return None
    measured = [c for c in cfg.cells_by_id if (results / c / "cell.json").exists()]
    read = claims_reading(cfg, results, set(cells), reference, paper, profile, tmp / "second-sample-read")
    verdicts, _ = comparable(reference, sampled)
    trials = sorted({int(k) for c in cells
                     for k in json.loads((sample / c / "cell.json").read_text()).get("trials", [])})
    return {"cells": len(cells), "of": len(measured), "trials": trials,
            "builds": {"measured": builds(sample, cells), "reference": builds(results, cells)},
            "verdicts": {c: (v if c in read else NOT_RUN) for c, v in verdicts.items()}}


def sample_based(results: Path, sample: Path, dest: Path) -> Path:
    """`dest`: links to every cell of `results`, the second sample's own measure in place of each cell
    it re-measured, a twin's too. The reference of a same-build control: the second sample, with the
    twins beside it (their own second sample where one is measured: trials on the sample's build)."""
    dest.mkdir()
    for cell in sorted(c for c in results.iterdir() if c.is_dir()):
        (dest / cell.name).symlink_to(((sample if finished(sample / cell.name) else results) / cell.name).resolve(),
                                      target_is_directory=True)
    return dest


def same_build(cfg: PaperConfig, sample: Path, alt: Alternative, measured: list[str], base: Path,
               base_verdicts: Verdicts, across: AbstractSet[str], paper: str, profile: str,
               tmp: Path) -> dict[str, Any] | None:
    """The alternative judged against the second sample where the second sample ran on the twins' own
    build: every touched cell re-measured in it, its trials and the twins' (theirs in `base`: their
    own second sample where measured) on one kernel (or simulator build). A flip that holds there is
    the choice's, not the build's; one that does not is no evidence of the choice. None where no
    such control exists."""
    if not measured or not all(finished(sample / c) for c in measured):
        return None
    twin_builds = set(builds(base, [alt.twins[c] for c in measured]))
    if len(twin_builds) != 1 or set(builds(sample, measured)) != twin_builds:
        return None
    where = tmp / f"{alt.key}-same-build"
    overlay(cfg, base, alt, where)
    verdicts, _ = comparable(base_verdicts, verdicts_in(paper, profile, where), across)
    # the twins it reads (their own second sample where measured) get the checks the alternative's get
    short_cells, packed_cells = short_of_trials(base, alt, measured), packed_elsewhere(base, alt, measured)
    return {"build": sorted(twin_builds), "base": {c: v for c, (v, _) in base_verdicts.items()},
            "verdicts": verdicts,
            "short": {"cells": sorted(short_cells.values()),
                      "claims": sorted(claims_reading(cfg, base, set(short_cells), base_verdicts, paper, profile,
                                                      tmp / f"{alt.key}-same-build-short"))},
            "packed_elsewhere": {"cells": sorted(packed_cells.values()),
                                 "claims": sorted(claims_reading(cfg, base, set(packed_cells), base_verdicts, paper,
                                                                 profile, tmp / f"{alt.key}-same-build-packed"))}}


def judge(paper: str, profile: str, results: Path, sample: Path | None = None) -> dict[str, Any]:
    """The reference's verdicts and each alternative's, with what each alternative still lacks, and
    the verdicts on the second sample (`sample`, where one is measured)."""
    cfg = load_paper(CONFIG_DIR / f"{paper}.yaml")
    with tempfile.TemporaryDirectory(prefix="tcprepro-overlay-") as tmp:
        ref_dir = Path(tmp) / "reference"
        overlay(cfg, results, None, ref_dir)
        reference = verdicts_in(paper, profile, ref_dir)
        alts: list[dict[str, Any]] = []
        memo: dict[str, list[str]] = {}
        base = sample_based(results, sample, Path(tmp) / "sample-based") if sample else None
        sampled: Verdicts | None = None
        if base is not None:
            overlay(cfg, base, None, Path(tmp) / "second-sample")
            sampled = verdicts_in(paper, profile, Path(tmp) / "second-sample")
        unread_checked: set[frozenset[str]] = set()
        for alt in cfg.alternatives:
            where = Path(tmp) / alt.key
            if alt.unread and alt.unread not in unread_checked:
                unread_claims(cfg, results, alt, reference, paper, profile, Path(tmp) / f"{alt.key}-unread")
                unread_checked.add(alt.unread)
            across = claims_reading(cfg, results, standing_in(cfg, alt), reference, paper, profile,
                                    Path(tmp) / f"{alt.key}-both")
            touched, missing = overlay(cfg, results, alt, where)
            verdicts, incomplete = comparable(reference, verdicts_in(paper, profile, where), across)
            measured = [c for c in touched if c not in missing]
            other = on_other_build(results, alt, measured, memo)
            other_claims = claims_reading(cfg, results, set(other), reference, paper, profile,
                                          Path(tmp) / f"{alt.key}-build")
            short_cells = short_of_trials(results, alt, measured)
            short_claims = claims_reading(cfg, results, set(short_cells), reference, paper, profile,
                                          Path(tmp) / f"{alt.key}-short")
            packed_cells = packed_elsewhere(results, alt, measured)
            packed_claims = claims_reading(cfg, results, set(packed_cells), reference, paper, profile,
                                           Path(tmp) / f"{alt.key}-packed")
            checked = (same_build(cfg, sample, alt, measured, base, sampled, across, paper, profile, Path(tmp))
                       if sample and base and sampled is not None and other else None)
            alts.append({"choice": alt.choice, "alternative": alt.alternative, "reading": alt.reading,
                         "favoured": alt.favoured, "touched": len(touched), "not_measured": sorted(missing),
                         **({"unread": sorted(alt.unread & set(touched))} if alt.unread else {}),
                         "incomplete": incomplete, "compares_both": sorted(across), "verdicts": verdicts,
                         "builds": {"measured": sorted({b for c in measured for b in memo[alt.twins[c]]}),
                                    "reference": sorted({b for c in measured for b in memo[c]})},
                         "other_build": {"cells": other, "claims": sorted(other_claims)},
                         "short": {"cells": sorted(short_cells.values()), "claims": sorted(short_claims)},
                         "packed_elsewhere": {"cells": sorted(packed_cells.values()),
                                              "claims": sorted(packed_claims)},
                         **({"same_build": checked} if checked else {})})
        second = (judge_sample(cfg, results, sample, reference, sampled, paper, profile, Path(tmp))
                  if sample and sampled is not None else None)
    lane = robustness_lane.judge(paper, profile, {c: v for c, (v, _) in reference.items()})
    return {"schema": SCHEMA, "paper": paper, "profile": profile,
            "reference": {c: v for c, (v, _) in reference.items()}, "alternatives": alts,
            **({"second_sample": second} if second else {}), **({"lane": lane} if lane else {})}


def flips(doc: dict[str, Any], claim: str) -> list[dict[str, Any]]:
    """The alternatives under which the claim's verdict differs from the reference's, or from the
    second sample's in a same-build control (a claim not evaluated under an alternative is not a
    flip: it was not run)."""
    ref = doc["reference"][claim]
    return [a for a in doc["alternatives"]
            if a["verdicts"].get(claim, NOT_RUN) not in (ref, NOT_RUN, ACROSS) or control(a, claim) == "flips"]


def control(alt: dict[str, Any], claim: str) -> str | None:
    """What the alternative's same-build control says of the claim: "flips" (its verdict against the
    second sample, all on the twins' build, differs from the second sample's), "holds", or None (no
    control, or the claim not judged in it)."""
    c = alt.get("same_build")
    if not c:
        return None
    got, base = c["verdicts"].get(claim, NOT_RUN), c["base"].get(claim, NOT_RUN)
    if NOT_RUN in (got, base) or got == ACROSS:
        return None
    return "holds" if got == base else "flips"


def not_run(doc: dict[str, Any], claim: str) -> list[dict[str, Any]]:
    """The alternatives whose cells for this claim are not all measured yet."""
    if doc["reference"][claim] == NOT_RUN:
        return []
    return [a for a in doc["alternatives"] if a["verdicts"].get(claim, NOT_RUN) == NOT_RUN]


def rests_on_sample(doc: dict[str, Any], claim: str) -> bool:
    """Whether the second sample of the reference alone gives the claim another verdict."""
    got = doc.get("second_sample", {}).get("verdicts", {}).get(claim, NOT_RUN)
    return got not in (doc["reference"][claim], NOT_RUN, ACROSS)


def summary(doc: dict[str, Any], claim: str) -> str:
    """robust (the same verdict under every alternative, leaving out those whose two readings the
    claim itself compares), depends on <choices>, rests on the sample (a second sample of the
    reference alone moves it: a flip under an alternative is then no evidence of the choice), or
    not yet run. The lane counts as a choice where the claim is judged on both lanes
    (analysis/robustness_lane.py); elsewhere the lane is not known, which the table's lane column
    and README's count of claims the lane reached say."""
    lane = {"lane"} if robustness_lane.flips(doc, claim) else set()
    flipped = sorted({a["choice"] for a in flips(doc, claim)} | lane)
    if rests_on_sample(doc, claim):
        return SAMPLE + (f" (flips under {', '.join(flipped)} too)" if flipped else "")
    if flipped:
        return "depends on " + ", ".join(flipped)
    if doc["reference"][claim] == NOT_RUN:
        return NOT_RUN
    if doc["alternatives"] and all(a["verdicts"].get(claim) == ACROSS for a in doc["alternatives"]):
        return ACROSS                   # nothing left to judge it under: robust would be vacuous
    missing = not_run(doc, claim)
    return f"not yet run under {len(missing)} of {len(doc['alternatives'])}" if missing else "robust"


def other_build(alt: dict[str, Any], claim: str) -> bool:
    """Whether the claim reads a cell whose stand-in under the alternative ran on another kernel (or
    simulator build) than the reference cell, and no same-build control confirms its flip: a flip
    there may come from the build, not the choice."""
    return claim in alt.get("other_build", {}).get("claims", ()) and control(alt, claim) != "flips"


def short(alt: dict[str, Any], claim: str) -> bool:
    """Whether the claim reads a cell whose stand-in under the alternative has fewer valid trials than
    planned: its verdict there rests on fewer trials than the reference's. Given the alternative's
    `same_build` record, the same of the stand-ins its control reads."""
    return claim in alt.get("short", {}).get("claims", ())


def packed(alt: dict[str, Any], claim: str) -> bool:
    """Whether the claim reads a compact stand-in whose claims input other code than this checkout's
    computed: its verdict there is the packing code's reading of the traces (as `short`, of an
    alternative or of its same-build control)."""
    return claim in alt.get("packed_elsewhere", {}).get("claims", ())


def key(alt: dict[str, Any]) -> str:
    return f"{alt['choice']}.{alt['alternative']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.robustness", description=__doc__.split("\n")[0])
    ap.add_argument("--paper", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--results", type=Path, help="the paper's results (default: results/<profile>/<paper>)")
    ap.add_argument("--second-sample", type=Path,
                    help="the reference cells measured again with other seeds (default: "
                         "results/second-sample/<profile>/<paper> beside --results, where it exists)")
    ap.add_argument("--out", type=Path, help="default: figures/<paper>/<profile>-robustness.json")
    a = ap.parse_args(argv)
    results = a.results or CHECKOUT / "results" / a.profile / a.paper
    if not results.is_dir():
        print(f"error: no results in {results}: run the workflow first", file=sys.stderr)
        return 2
    sample = a.second_sample or second_sample_dir(results)
    if a.second_sample and not sample.is_dir():
        print(f"error: --second-sample {sample}: no such folder", file=sys.stderr)
        return 2
    for folder in [results] + ([sample] if sample.is_dir() else []):
        if lost := aggregate.unaggregated(folder):
            print(f"error: {folder}: {len(lost)} cells hold trials but no cell.json ({', '.join(lost[:3])}"
                  f"{', ...' if len(lost) > 3 else ''}), so they would count as not measured; aggregate them "
                  f"(`python -m analysis.aggregate --expected N {folder}/<cell>`, or the workflow; `tcprepro "
                  "archive restore` writes them)", file=sys.stderr)
            return 2
    try:
        doc = judge(a.paper, a.profile, results, sample if sample.is_dir() else None)
    except UnreadIsRead as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
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
