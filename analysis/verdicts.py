"""A paper claim's verdict: which comparisons held, which failed, which could not be made.

`reproduced` when every comparison held, `partly` when some did, `not reproduced` when none did,
`not evaluated` when the cells needed were not run. Every paper's claim evaluators return these.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Verdict:
    claim: str
    text: str
    verdict: str
    held: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def judge(claim: dict[str, Any], held: list[str], failed: list[str], missing: list[str], note: str = "") -> Verdict:
    """The verdict of a claim (its config entry) from its comparisons, each a line with the numbers."""
    if not held and not failed:
        verdict = "not evaluated"
    elif not failed:
        verdict = "reproduced"
    elif held:
        verdict = "partly"
    else:
        verdict = "not reproduced"
    return Verdict(claim["id"], claim["text"], verdict, held, failed, missing, note)
