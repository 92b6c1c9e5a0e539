"""Every paper lists its statements, each judged by claims or not judged with a reason, and each
paper's README holds the table the config gives (analysis/report/statements.py)."""
from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from analysis.report import statements
from configuration.load import SCHEMA_PATH, paper_names
from experiments import load_paper

REPO = Path(__file__).resolve().parents[2]


def test_every_readme_holds_the_statement_table_its_config_gives() -> None:
    assert statements.main(["--check", "--figures", str(REPO / "figures")]) == 0


@pytest.mark.parametrize("paper", paper_names())
def test_every_claim_of_the_paper_judges_one_of_its_statements(paper: str) -> None:
    ref = load_paper(paper).data["reference"]
    assert ref.get("statements"), f"config/{paper}.yaml lists no statements"
    assert statements.problems(ref) == []


def test_an_unknown_claim_and_an_unjudged_claim_are_named() -> None:
    ref = {"claims": [{"id": "a", "text": "t"}, {"id": "b", "text": "t"}, {"id": "c", "text": "t", "beyond": True}],
           "statements": [{"source": "5", "text": "x", "claims": ["a", "zz"]},
                          {"source": "5", "text": "y", "not_judged": "a fact of their testbed"}]}
    assert statements.problems(ref) == ["a statement names claim 'zz', which config has not",
                                        "claim 'b' judges none of the paper's statements"]


def test_a_stale_table_is_refused_and_rewritten(tmp_path: Path) -> None:
    paper = paper_names()[0]
    (tmp_path / paper).mkdir()
    readme = tmp_path / paper / "README.md"
    readme.write_text(f"# {paper}\n\n{statements.BEGIN}\n| made up |\n{statements.END}\n")
    assert statements.main(["--check", "--paper", paper, "--figures", str(tmp_path)]) == 1
    assert statements.main(["--paper", paper, "--figures", str(tmp_path)]) == 0
    assert statements.main(["--check", "--paper", paper, "--figures", str(tmp_path)]) == 0
    assert "| made up |" not in readme.read_text()


def test_a_statement_needs_its_claims_or_the_reason_none_judges_it() -> None:
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    validator = jsonschema.Draft202012Validator({**schema["$defs"]["statements"], "$defs": schema["$defs"]})
    assert list(validator.iter_errors([{"source": "5", "text": "x"}]))
    assert list(validator.iter_errors([{"source": "5", "text": "x", "claims": ["a"], "not_judged": "r"}]))
    assert not list(validator.iter_errors([{"source": "5", "text": "x", "not_judged": "their testbed"}]))
