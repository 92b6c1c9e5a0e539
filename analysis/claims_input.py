"""What a paper's claims read of a trial beyond its summary.json: the values its analysis derives from
the raw traces (tcp_probe.trace, qdisc.csv, the UDP flows' packet logs), kept in claims-input.json.

An open choice's twin is archived compactly (archive/compact.py): its spec, provenance, summary and
logs, and this file instead of the raw traces. Each value here is the output of the very function the
analysis reads it through, computed from the raw traces when the trial holds them and read from this
file when it does not, so a whole trial and its compact form give the same verdicts. A value records
the module that computed it (its source's SHA-256): read under other code, it is still the value that
code computed when the trial was packed, and the reader says so once; measuring the trial again on
the kernel build its provenance names gives the raw traces back byte for byte (docs/uml.md), and
with them the new code's value.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

FILE = "claims-input.json"
SCHEMA = "tcprepro.claims-input/1"
# The raw trace every measured trial holds: where it is, the values come from the raw traces.
RAW_MARK = "tcp_probe.trace"
# Per paper, the values its claims read of a trial's raw traces: {name: "module:function"}, each
# function taking the trial folder and returning a JSON value (None where the trial has no such value).
FROM_RAW: dict[str, dict[str, str]] = {
    "collateral": {"flow_events": "analysis.collateral.modes:flow_events",
                   "owd_band_densities": "analysis.collateral.owd_bands:claim_densities"},
    "westwood": {"cwnd_range": "analysis.westwood.run:cwnd_range"},
    "ledbat": {"metrics": "analysis.ledbat.metrics:trial_metrics_cached"},
}


class ClaimsInputError(RuntimeError):
    """A trial whose claims cannot be read: neither its raw traces nor a usable claims-input.json."""


def has_raw(trial: Path) -> bool:
    return (trial / RAW_MARK).exists()


def is_compact(trial: Path) -> bool:
    """A trial restored from a compact archive: its claims input without the raw traces."""
    return (trial / FILE).exists() and not has_raw(trial)


@cache
def _module_digest(module: str) -> str:
    source = importlib.import_module(module).__file__
    assert source is not None
    return hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16]


def _function(ref: str) -> Callable[[Path], Any]:
    module, _, name = ref.partition(":")
    fn: Callable[[Path], Any] = getattr(importlib.import_module(module), name)
    return fn


def document(paper: str, trial: Path, left_out: dict[str, str]) -> dict[str, Any]:
    """claims-input.json of a trial that holds its raw traces: every value the paper's claims read,
    computed by its own function, and the SHA-256 of each raw file the compact form leaves out (what
    the trial measured again must give)."""
    if not has_raw(trial):
        raise ClaimsInputError(f"{trial}: no {RAW_MARK}, so its claims input cannot be computed; restore the "
                               "trial whole (`make restore`) or measure it again")
    refs = FROM_RAW[paper]
    return {"schema": SCHEMA, "paper": paper, "cell": trial.parent.name,
            "trial": int(trial.name.removeprefix("trial-")),
            "values": {name: _function(ref)(trial) for name, ref in sorted(refs.items())},
            "computed_by": {name: f"{ref.partition(':')[0]}@{_module_digest(ref.partition(':')[0])}"
                            for name, ref in sorted(refs.items())},
            "left_out": dict(sorted(left_out.items()))}


def encode(doc: dict[str, Any]) -> bytes:
    """The file's bytes: the same document always gives the same bytes (floats round-trip exactly)."""
    return (json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n").encode()


@cache
def _read(trial: Path) -> dict[str, Any] | None:
    path = trial / FILE
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except ValueError as exc:
        raise ClaimsInputError(f"{path}: not valid JSON ({exc}); restore the trial from its archive "
                               "(`make restore`)") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("values"), dict):
        raise ClaimsInputError(f"{path}: not a {SCHEMA} document; restore the trial from its archive (`make restore`)")
    return doc


def _by_other_code(doc: dict[str, Any], name: str) -> str | None:
    """Who computed the value `name` when that is not this checkout's module (None when it is, or
    when the file does not say)."""
    by = str(doc.get("computed_by", {}).get(name, ""))
    module = by.partition("@")[0]
    return by if module and by != f"{module}@{_module_digest(module)}" else None


def computed_elsewhere(trial: Path) -> list[str]:
    """The values a compact trial's claims are read from that other code than this checkout's
    computed; empty for a trial with its raw traces (this code reads those)."""
    if not is_compact(trial):
        return []
    doc = _read(trial.resolve())
    return [] if doc is None else sorted(n for n in doc["values"] if _by_other_code(doc, n))


_warned: set[tuple[Path, str]] = set()


def stored(trial: Path, name: str) -> Any:
    """The value `name` the trial's claims-input.json holds; None when the trial has none (then what
    reads it stays unmeasured, never guessed). Said once on stderr when other code computed it."""
    trial = trial.resolve()
    doc = _read(trial)
    if doc is None or name not in doc["values"]:
        return None
    by = _by_other_code(doc, name)
    if by and (trial, name) not in _warned:
        _warned.add((trial, name))
        print(f"{trial / FILE}: {name} was computed by {by}, not this checkout's {by.partition('@')[0]}; "
              "its raw traces are not archived (a compact twin): measure the trial again to read it with this code",
              file=sys.stderr)
    return doc["values"][name]
