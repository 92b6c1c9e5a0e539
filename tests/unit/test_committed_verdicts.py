"""What is committed agrees with the verdict rule: every verdicts.json's verdicts follow from its own
comparisons, the README's status block is what the full-profile verdicts give, every claim's bars
carry a reason and every headline names a condition its evaluator judges."""
from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from analysis.report import status
from analysis.verdicts import Comparison, verdict_of
from configuration.load import SCHEMA_PATH
from experiments import load_paper

REPO = Path(__file__).resolve().parents[2]
COMMITTED = sorted(REPO.glob("figures/*/full/verdicts.json")) + sorted(
    REPO.glob("figures/*/smoke-reference/verdicts.json"))
PAPERS = ("collateral", "ledbat", "westwood", "wlan")


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(REPO)))
def test_committed_verdicts_follow_from_their_comparisons(path: Path) -> None:
    for v in json.loads(path.read_text()):
        comps = [Comparison(line, "", o) for o in ("held", "failed", "indistinguishable", "missing")
                 for line in v.get(o, [])]
        for c in comps:
            c.headline = c.where.endswith("(headline)")
        assert v["verdict"] == verdict_of(comps), v["claim"]
        assert not (v["verdict"] == "reproduced" and (v["failed"] or v["indistinguishable"] or v["missing"]))
        assert not (v["verdict"] == "partly" and len(v["held"]) <= len(v["failed"]))
        if v["verdict"] != "reproduced":
            assert v["why"], v["claim"]


def test_the_readme_status_block_is_what_the_verdicts_give() -> None:
    assert status.main(["--check", "--readme", str(REPO / "README.md"), "--figures", str(REPO / "figures")]) == 0


def test_a_stale_readme_status_block_is_refused(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{status.BEGIN}\n| made up |\n{status.END}\n")
    assert status.main(["--check", "--readme", str(readme), "--figures", str(REPO / "figures")]) == 1
    assert status.main(["--readme", str(readme), "--figures", str(REPO / "figures")]) == 0
    assert status.main(["--check", "--readme", str(readme), "--figures", str(REPO / "figures")]) == 0
    n = sum(not v.get("beyond") for v in json.loads((REPO / "figures/wlan/full/verdicts.json").read_text()))
    assert f"| wlan | {n} |" in readme.read_text()
    with pytest.raises(ValueError, match="no status block"):
        status.replace("# no block\n", "x")


def _schema_errors(claim: dict[str, Any]) -> list[str]:
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    validator = jsonschema.Draft202012Validator({**schema["$defs"]["claim"], "$defs": schema["$defs"]})
    return [e.message for e in validator.iter_errors(claim)]


def test_a_bar_without_its_reason_is_refused() -> None:
    claim = {"id": "x", "text": "t", "source": "4.1", "bars": {"tolerance_pct": {"value": 3}}}
    assert any("'why' is a required property" in m for m in _schema_errors(claim))
    claim["bars"]["tolerance_pct"]["why"] = "the paper's own spread"
    assert _schema_errors(claim) == []
    assert _schema_errors({"id": "x", "text": "t"})            # where the paper says it is required


def _comparisons(paper: str, claim: dict[str, Any]) -> list[Comparison]:
    """The claim's comparisons with nothing measured: every condition it judges, by its `where`."""
    cfg = load_paper(paper)
    params = {cid: c.params for cid, c in cfg.cells_by_id.items()}
    if paper == "wlan":
        mod = importlib.import_module(f"analysis.{paper}.claims")
        ctx = mod.Context(mod.Cells.from_cells({}, params), cfg.data["reference"], "full")
        return list(mod.EVALUATORS[claim["id"]](ctx, claim))
    mod = importlib.import_module(f"analysis.{paper}.claims")
    cells = mod.Cells.from_cells({}, params)
    if paper == "westwood":
        return list(mod.CLAIMS[claim["id"]](cells, claim, mod.reference_throughput(cfg.data["reference"])))
    return list(mod.CLAIMS[claim["id"]](cells, claim))


@pytest.mark.parametrize("paper", PAPERS)
def test_every_headline_names_a_condition_its_claim_judges(paper: str) -> None:
    for claim in load_paper(paper).data["reference"]["claims"]:
        wheres = {c.where for c in _comparisons(paper, claim)}
        assert wheres, claim["id"]
        for h in claim.get("headline") or []:
            assert h in wheres, f"{paper} {claim['id']}: headline {h!r} is none of {sorted(wheres)[:5]}"


def test_the_configs_why_goes_with_the_full_profile_only() -> None:
    from analysis.report.paper_run import claims_of

    cfg = load_paper("wlan")
    assert any("why" in c for c in claims_of(cfg, "full"))
    assert not any("why" in c for c in claims_of(cfg, "quick"))


@pytest.mark.parametrize("paper", PAPERS)
def test_a_claims_investigation_is_in_the_committed_outputs_and_linked(paper: str) -> None:
    """A claim that names its investigation finds that section in the full reference's verdict.md
    and its figure beside it, and REPORT.md links the claim's why to both when it is not reproduced."""
    from analysis.report.claims_markdown import anchor

    full = REPO / "figures" / paper / "full"
    report = (REPO / "figures" / "REPORT.md").read_text()
    verdicts = {v["claim"]: v for v in json.loads((full / "verdicts.json").read_text())}
    for claim in load_paper(paper).data["reference"].get("claims", []):
        inv = claim.get("investigation")
        if not inv:
            continue
        assert f"## {inv['section']}\n" in (full / "verdict.md").read_text(), (claim["id"], inv["section"])
        assert (full / f"{inv['figure']}.png").exists(), (claim["id"], inv["figure"])
        if verdicts[claim["id"]]["verdict"] != "reproduced":
            assert f"({paper}/full/verdict.md#{anchor(inv['section'])})" in report, claim["id"]
            assert f"({paper}/full/{inv['figure']}.png)" in report, claim["id"]
