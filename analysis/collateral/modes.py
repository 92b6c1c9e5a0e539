"""How much of its time an H-TCP flow grows as NewReno: the share of each flow's congestion epochs
that lies within the first `window` seconds after the event that opened it.

H-TCP grows by NewReno's one segment per round trip for the first second after a congestion event
(section 4.2 of the paper; Linux's tcp_htcp: Delta_L = 1 s), and faster after it. The paper explains
H-TCP's five-flow behaviour by its flows spending proportionally more time in that mode as more flows
make congestion events more frequent (claim htcp_newreno_mode_share). The events are those of each
flow's cwnd trace (analysis/epochs.py); an epoch of length T spends min(T, window) in the mode, and a
trial's share is the sum of that over every complete epoch of every TCP flow over their summed length.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from analysis import claims_input
from analysis.aggregate import with_trial_metrics
from analysis.epochs import congestion_events
from analysis.metrics import probe_for_flow
from analysis.parsers import read_tcp_probe


def metric_name(window_s: float) -> str:
    return f"newreno_mode_share_{window_s:g}s"


def flow_events(trial: Path) -> tuple[tuple[float, ...], ...] | None:
    """The congestion event times (s) of each TCP flow of a trial, from its cwnd trace; a compact
    twin's from its claims-input.json (analysis/claims_input.py); None without either. Read once per
    trial and process: the mode share and the paper's trial-length rule (verdict.md) both use them."""
    return _flow_events(trial.resolve())


@functools.cache
def _flow_events(trial: Path) -> tuple[tuple[float, ...], ...] | None:
    if not claims_input.has_raw(trial):
        stored = claims_input.stored(trial, "flow_events")
        return None if stored is None else tuple(tuple(float(t) for t in e) for e in stored)
    prov = json.loads((trial / "provenance.json").read_text())
    frame = read_tcp_probe(trial / "tcp_probe.trace").frame
    out = []
    for name, endpoint in sorted(prov.get("endpoints", {}).items()):
        if name.startswith("bulk"):
            probe = probe_for_flow(frame, endpoint["port"])
            out.append(tuple(congestion_events(probe["t"].to_numpy(float), probe["snd_cwnd"].to_numpy(float))))
    return tuple(out)


def mode_share(events: Sequence[Sequence[float]], window_s: float) -> float | None:
    """Time within `window_s` after an event over all time, over every complete epoch of every flow;
    None without a complete epoch."""
    gaps = np.concatenate([np.diff(np.asarray(e, dtype=float)) for e in events]) if events else np.empty(0)
    if gaps.size == 0 or gaps.sum() <= 0:
        return None
    return float(np.minimum(gaps, window_s).sum() / gaps.sum())


def claim_windows(claims: Iterable[dict[str, Any]]) -> list[float]:
    """Every window a claim's `where` names under `newreno_mode_s`."""
    return sorted({float(w) for c in claims if (w := (c.get("where") or {}).get("newreno_mode_s")) is not None})


def with_mode_share(results: Path, cells: dict[str, dict[str, Any]], windows: Sequence[float],
                    params: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The H-TCP cells with each window's mode share merged into their `metrics` (per valid trial,
    then the papers' trimmed mean); other cells as they are."""
    if not windows:
        return cells

    def shares(trial: Path) -> dict[str, float]:
        events = flow_events(trial)
        return {} if events is None else \
            {metric_name(w): s for w in windows if (s := mode_share(events, w)) is not None}

    return with_trial_metrics(results, cells, ("provenance.json",), shares,
                              only=lambda cell_id: (params.get(cell_id) or {}).get("cc") == "htcp")
