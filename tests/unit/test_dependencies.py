"""Every third-party module the project imports is declared in pyproject.toml, pinned as
requirements.lock pins it; every declared dependency is imported or has a stated use.

A module imported but only installed as another package's dependency (numpy through pandas) works
until that package drops it; a dependency nothing uses (a pin left behind) is installed for nothing.
"""
from __future__ import annotations

import ast
import re
import sys
import tomllib
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
# Modules from Debian's packages (config/system-packages.txt), not from PyPI: the venv sees them.
SYSTEM_MODULES = {"mininet": "mininet"}
# Declared, used, but never imported: what uses them instead.
USED_WITHOUT_IMPORT = {
    "virtme-ng": "the VM lane runs its `vng` command (testbed/vng.py)",
    "snakemake-executor-plugin-slurm": "Snakemake loads it for `--workflow-profile profiles/slurm`",
    "ruff": "make lint", "mypy": "make lint", "types-pyyaml": "stubs mypy reads",
}


def name(requirement: str) -> str:
    """The normalised distribution name of a `name==version` requirement (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[=<>!~\[; ]", requirement, maxsplit=1)[0]).lower()


def declared(group: str | None = None) -> dict[str, str]:
    project = PYPROJECT["project"]
    reqs = project["dependencies"] if group is None else project["optional-dependencies"][group]
    return {name(r): r for r in reqs}


def code_files() -> dict[str, list[Path]]:
    """The project's code (the packages pyproject installs, the workflow, scripts) and the tests."""
    packages = [p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
    project = [f for p in packages for f in (REPO / p).rglob("*.py")]
    project += [REPO / "Snakefile", *(REPO / "rules").glob("*.smk"), *(REPO / "scripts").glob("*.py")]
    return {"project": project, "tests": sorted((REPO / "tests").rglob("*.py"))}


def imported(path: Path) -> set[str]:
    """Top-level names of the absolute imports in a Python file or a Snakefile (whose rules are not
    Python: its import lines are read as text)."""
    if path.suffix == ".py":
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module}
    else:
        text = path.read_text()
        names = set(re.findall(r"^\s*from\s+([\w.]+)\s+import\b", text, re.M))
        names |= {m.strip().split()[0] for line in re.findall(r"^\s*import\s+([\w., ]+)$", text, re.M)
                  for m in line.split(",")}
    return {n.split(".")[0] for n in names}


def third_party(path: Path) -> set[str]:
    local = {p.name for p in REPO.iterdir() if (p / "__init__.py").exists()}
    local |= {p.stem for p in path.parent.glob("*.py")}       # a test's helper module beside it
    return {m for m in imported(path) if m not in sys.stdlib_module_names and m not in local}


@cache
def installed() -> dict[str, list[str]]:
    return packages_distributions()


def distributions(module: str) -> set[str]:
    return {name(d) for d in installed().get(module, [])}


def test_every_third_party_import_is_declared() -> None:
    allowed = {"project": set(declared()), "tests": set(declared()) | set(declared("dev"))}
    system = (REPO / "config" / "system-packages.txt").read_text().split()
    missing = []
    for group, files in code_files().items():
        for path in files:
            for module in third_party(path):
                if module in SYSTEM_MODULES:
                    assert SYSTEM_MODULES[module] in system, f"{module}: not in config/system-packages.txt"
                    continue
                dists = distributions(module)
                if not dists & allowed[group]:
                    missing.append(f"{path.relative_to(REPO)} imports {module} "
                                   f"({', '.join(sorted(dists)) or 'not installed'}): not declared")
    assert not missing, "pyproject.toml lacks:\n" + "\n".join(sorted(missing))


def test_every_declared_dependency_is_used() -> None:
    modules = {m for files in code_files().values() for path in files for m in third_party(path)}
    used = {d for m in modules for d in distributions(m)}
    unused = [d for d in {**declared(), **declared("dev")} if d not in used and d not in USED_WITHOUT_IMPORT]
    assert not unused, f"declared in pyproject.toml, never imported and no stated use: {unused}"


def test_declared_pins_are_the_lock_s() -> None:
    lock = {name(line): line.strip() for line in (REPO / "requirements.lock").read_text().splitlines()
            if line.strip() and not line.startswith("#")}
    for dist, requirement in {**declared(), **declared("dev")}.items():
        version = requirement.split("==", 1)[1]
        assert lock.get(dist, "").endswith(f"=={version}"), f"{requirement}: requirements.lock has {lock.get(dist)}"
