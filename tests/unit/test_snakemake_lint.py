"""scripts/snakemake_lint.py: `make lint` passes the lints it explains and fails on a new one, or on
an explanation no lint needs any more."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("snakemake_lint", REPO / "scripts" / "snakemake_lint.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


lint = load()

# The shape of Snakemake 9's text output (abridged bodies), as `snakemake --lint` prints it here.
OUTPUT = """Using workflow specific profile profiles/default for setting default command line arguments.
Lints for snakefile /ck/Snakefile:
%(extra)s
Lints for rule trial (line 3, /ck/rules/trials.smk):
    * Specify a conda environment or container for each rule.:
      This way, the used software for each specific step is documented, and the
    * Shell command directly uses variable PY from outside of the rule:
      It is recommended to pass all files as input and output, and non-file
"""


def test_the_explained_lints_pass_whatever_their_line() -> None:
    lints = lint.parse(OUTPUT % {"extra": ""}, Path("/ck"))
    assert lint.Lint("rule trial (rules/trials.smk)", "Specify a conda environment or container for each rule") in lints
    assert len(lints) == 2 and lint.check(lints) == []


def test_a_new_lint_fails_and_is_named() -> None:
    extra = "    * Path composition with '+' in line 9:\n      This becomes quickly unreadable."
    problems = lint.check(lint.parse(OUTPUT % {"extra": extra}, Path("/ck")))
    assert problems == ["new lint: snakefile Snakefile: Path composition with '+' (fix it, or explain it in "
                        "scripts/snakemake_lint.py)"]


def test_an_explanation_without_its_lint_fails() -> None:
    lints = [x for x in lint.parse(OUTPUT % {"extra": ""}, Path("/ck")) if "variable PY" not in x.title]
    (problem,) = lint.check(lints)
    assert problem.startswith("no such lint any more: ") and "variable PY from outside of the rule" in problem
