"""`snakemake --lint` for `make lint`: every lint it prints must be one this file explains, and every
explanation must still match a lint; anything else fails, naming it.

Snakemake 9's CLI prints its lints as text whatever `--lint json` asks for, so this reads the text:
one `Lints for <item>:` line per Snakefile or rule, then `    * <title>:` per lint. Line numbers are
dropped from items and titles, so an edit above a lint does not make it new.
"""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
# The lints are of the files and rules, the same for any papers; a simulated paper needs no kernel
# probe while the workflow loads.
COMMAND = [sys.executable, "-m", "snakemake", "--lint", "--config", "papers=[wlan]"]

RULE = r"rule \w+ \(rules/\w+\.smk\)"


@dataclass(frozen=True)
class Explained:
    item: str        # a regex over the linted item: "snakefile <path>" or "rule <name> (<path>)"
    title: str       # a regex over the lint's title, line numbers dropped
    why: str


EXPLAINED = (
    Explained(RULE, r"Specify a conda environment or container for each rule",
              "the environment is the pinned venv (requirements.lock) with Debian's packages "
              "(config/system-packages.txt), or the Dockerfile's image: Mininet, iperf, tc and the kernels "
              "are not conda packages"),
    Explained(RULE, r"Shell command directly uses variable PY from outside of the rule",
              "PY is the venv's interpreter, an absolute path: as a rule's params it would rerun every "
              "trial of a checkout that moved"),
)


@dataclass(frozen=True)
class Lint:
    item: str
    title: str


def parse(text: str, root: Path = CHECKOUT) -> list[Lint]:
    """The lints of `snakemake --lint`'s text output, paths relative to `root`, no line numbers."""
    out, item = [], None
    for line in text.splitlines():
        if line.startswith("Lints for "):
            item = line.removeprefix("Lints for ").rstrip(":").replace(f"{root}/", "")
            item = re.sub(r"\(line \d+, ", "(", item)
        elif line.startswith("    * ") and item is not None:
            title = line.removeprefix("    * ").rstrip(":").rstrip(".")
            out.append(Lint(item, re.sub(r" in line \d+", "", title)))
    return out


def check(lints: list[Lint]) -> list[str]:
    """What fails: lints no explanation covers, and explanations no lint needs any more."""
    def covers(e: Explained, lint: Lint) -> bool:
        return bool(re.fullmatch(e.item, lint.item) and re.match(e.title, lint.title))

    new = [f"new lint: {lint.item}: {lint.title} (fix it, or explain it in scripts/snakemake_lint.py)"
           for lint in lints if not any(covers(e, lint) for e in EXPLAINED)]
    stale = [f"no such lint any more: {e.item}: {e.title} (remove it from scripts/snakemake_lint.py)"
             for e in EXPLAINED if not any(covers(e, lint) for lint in lints)]
    return new + stale


def main() -> int:
    proc = subprocess.run(COMMAND, cwd=CHECKOUT, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    lints = parse(text)
    if proc.returncode != 0 and not lints:
        print(f"snakemake --lint failed (exit {proc.returncode}):\n{text}", file=sys.stderr)
        return 2
    problems = check(lints)
    for line in problems:
        print(f"snakemake --lint: {line}", file=sys.stderr)
    if not problems:
        print(f"snakemake --lint: {len(lints)} lints, each explained in scripts/snakemake_lint.py")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
