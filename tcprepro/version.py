"""`tcprepro --version`: the project's version and, in a git checkout, its commit.

A bug report or a result shared elsewhere needs both: the version names the release, the commit the
exact code (and whether the checkout had changes beyond it).
"""
from __future__ import annotations

import subprocess
import tomllib
from importlib import metadata

from configuration import CHECKOUT


def version() -> str:
    """pyproject.toml's version where this code runs from a checkout (an editable install's metadata
    may be another checkout's), else the installed package's."""
    pyproject = CHECKOUT / "pyproject.toml"
    if pyproject.is_file():
        return str(tomllib.loads(pyproject.read_text())["project"]["version"])
    return metadata.version("tcprepro")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(CHECKOUT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def commit() -> str | None:
    """The checkout's commit, with ", modified" when tracked files differ from it; None outside git
    (the docker image carries no .git) or where git cannot read the checkout."""
    if not (CHECKOUT / ".git").exists():
        return None
    head = _git("rev-parse", "--short=12", "HEAD")
    if not head:
        return None
    changes = _git("status", "--porcelain", "--untracked-files=no")
    return head.strip() + (", modified" if changes else "")


def describe() -> str:
    """One line: `tcprepro 0.1.0 (git 0123456789ab)`."""
    sha = commit()
    return f"tcprepro {version()}" + (f" (git {sha})" if sha else "")
