"""Each figure's caption, declared by the code that draws it.

A drawing function of analysis/<paper>/ names the figure files it writes with `@draws(pattern)`
(a glob over the file's stem), and its docstring says what they show; `title` adds what only the
paper's config knows (which figure of the paper a generic drawer drew, its title there). The
reports (analysis/report/report.py, analysis/report/html_report.py) read captions here rather than from the PNGs,
which carry none, so a caption changes with the code and a committed result set finds its captions
without being redrawn.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TypeVar

ANALYSIS = Path(__file__).resolve().parents[1]

Title = Callable[[dict[str, Any], str], str]       # (the config's `reference`, the file's stem) -> title
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Drawn:
    pattern: str
    description: str
    title: Title | None = None

    def caption(self, reference: dict[str, Any], stem: str) -> str:
        head = self.title(reference, stem) if self.title else ""
        return f"{head}. {self.description}" if head else self.description


_DRAWN: dict[str, list[Drawn]] = {}


def _description(func: Callable[..., Any]) -> str:
    """The docstring as one paragraph: a caption is running text."""
    return " ".join((func.__doc__ or "").split())


def draws(*patterns: str, title: Title | None = None) -> Callable[[F], F]:
    """Marks a function of analysis/<paper>/ as the one that writes the figures whose stems match
    `patterns`; the paper is the package the function lives in."""
    def mark(func: F) -> F:
        paper = func.__module__.split(".")[1]
        if not func.__doc__:
            raise TypeError(f"{func.__module__}.{func.__name__}: a figure's drawing code needs a docstring, "
                            "its caption")
        _DRAWN.setdefault(paper, []).extend(Drawn(p, _description(func), title) for p in patterns)
        return func
    return mark


def declared(paper: str) -> list[Drawn]:
    """Every figure pattern the paper's analysis package declares (importing its parts)."""
    if (ANALYSIS / paper / "__main__.py").exists():
        importlib.import_module(f"analysis.{paper}.__main__")
    return _DRAWN.get(paper, [])


def caption(paper: str, stem: str, reference: dict[str, Any]) -> str | None:
    """The caption of figure `stem` of `paper`, or None when no drawing code declares it."""
    drawn = next((d for d in declared(paper) if fnmatchcase(stem, d.pattern)), None)
    return drawn.caption(reference, stem) if drawn else None
