"""A twin trial's compact archive: what its claims read, its spec and provenance, not its raw traces.

An open choice's twin (configuration/choices.py: a cell id holding `+`) is measured only for the
robustness verdicts (docs/robustness.md), and those read of a trial its summary.json and the few
values the paper's analysis derives from the raw traces (analysis/claims_input.py). Its archive
holds every file of the trial but the raw traces, and claims-input.json with those values and the
SHA-256 of each trace left out. A UML trial is a function of its spec and seeds: on the kernel
build its provenance names it gives the same bytes in every raw series on any machine image
(docs/uml.md), so the trial measured again regenerates the traces, and the hashes say whether it
did. The robustness runs may add 150 MB to the repository, and the twins archived whole take
about 285 MB: a LEDBAT twin of a 100-1000 MB transfer is 0.5-7 MB whole, about 6 KB compact.

Only the measured papers' twins are compact: 802.11b's (simulated) raw output is a few KB, and a
reference trial is archived whole, the evidence behind the committed figures.
"""
from __future__ import annotations

import fnmatch
import hashlib
from pathlib import Path

from analysis import claims_input
from configuration.choices import TWIN_SEP

# The raw traces a compact archive leaves out (file-name patterns, also inside invalid-attempts/).
RAW = ("tcp_probe.trace", "qdisc.csv", "voip-*.csv", "*.pcap")
# Whose twins are archived compactly: the papers whose claims' raw-derived values
# analysis/claims_input.py names.
PAPERS = frozenset(claims_input.FROM_RAW)
FILE = claims_input.FILE


def applies(paper: str, cell_id: str) -> bool:
    """Whether a trial of this cell is archived compactly: a measured paper's twin."""
    return paper in PAPERS and TWIN_SEP in cell_id


def is_raw(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name.rsplit("/", 1)[-1], p) for p in RAW)


def is_compact(listed: dict[str, str] | set[str] | list[str]) -> bool:
    """Whether a manifest entry (or an archive's files) is a compact one: it holds the claims input."""
    return FILE in listed


def files(paper: str, trial: Path, names: list[str]) -> dict[str, bytes] | None:
    """{name: bytes} of the trial's compact archive, `names` being its files (archive.trials
    trial_files): each but the raw traces as it is, and claims-input.json computed from the traces
    (kept as it is when the trial is itself compact: it holds no traces to compute it from). None for
    a trial with neither (one that failed before tracing, invalid): its files are all small."""
    out = {n: (trial / n).read_bytes() for n in names if not is_raw(n)}
    if not claims_input.has_raw(trial):
        return out if FILE in out else None
    left_out = {n: hashlib.sha256((trial / n).read_bytes()).hexdigest() for n in names if is_raw(n)}
    out[FILE] = claims_input.encode(claims_input.document(paper, trial, left_out))
    return out
