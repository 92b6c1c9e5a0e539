"""How steeply the UDP flow's OWD CDF rises within a band of delays: the share of its packets whose
one-way delay falls in [low, high), per millisecond of the band.

The paper reads Figure 3a's CUBIC curve as a shape: a steep rise at 400 ms, slowing between 440
and 480 ms, rising again after (claim cubic_owd_cdf_shape). The CDF's slope over a band is the
packets' density there, so one band against another says where the curve is steeper. The bands
come from the claim's `where` in config/collateral.yaml; each trial gives one value per band, so a
comparison of two bands is paired by trial and judged against the trials' own spread.
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
from analysis.parsers import read_voip
from analysis.summarize import measurement_window, voip_in_window
from configuration.load import CONFIG_DIR
from experiments import load_paper

# (low, high) in ms; high None: up to the trial's largest OWD, where the CDF reaches 1.
Band = tuple[float, float | None]


def metric_name(band: Band) -> str:
    low, high = band
    return f"owd_density_{low:g}_{'end' if high is None else f'{high:g}'}_per_ms"


def density(owd_ms: np.ndarray, band: Band) -> float | None:
    """Share of the packets with low < OWD <= high, per ms of the band: the CDF's rise over the
    band divided by its width. None without packets, or for an open band the curve never enters."""
    if owd_ms.size == 0:
        return None
    low, high = band
    top = float(owd_ms.max()) if high is None else high
    if top <= low:
        return None
    share = np.count_nonzero((owd_ms > low) & (owd_ms <= top)) / owd_ms.size
    return float(share) / (top - low)


@functools.cache
def owd_samples(trial: Path) -> np.ndarray:
    """The UDP packets' one-way delays (ms) inside the trial's measurement window. Read once per
    process: the band metrics, Figure 3 and the CUBIC investigation all read it (callers copy)."""
    spec = json.loads((trial / "spec.json").read_text())
    prov = json.loads((trial / "provenance.json").read_text())
    window = measurement_window(spec, prov)
    out = []
    for f in (f for f in spec["flows"] if f["kind"] == "voip"):
        log = read_voip(trial / f"voip-{f['id']}.csv", trial / f"voip-{f['id']}.json")
        out.append(voip_in_window(log, window)[0]["owd_ms"].to_numpy())
    return np.concatenate(out) if out else np.array([])


def pooled_owd(trials: Iterable[Path]) -> np.ndarray:
    """Every packet's OWD of the trials, sorted: the pooled CDF's x values (Figure 3 and the
    investigations draw each cell's valid trials this way)."""
    parts = [owd_samples(t) for t in trials]
    return np.sort(np.concatenate(parts)) if parts else np.array([])


def claim_bands(claims: Iterable[dict[str, Any]]) -> list[Band]:
    """Every band a claim's `where` names under `bands_ms`, in order."""
    out: list[Band] = []
    for c in claims:
        for band in ((c.get("where") or {}).get("bands_ms") or {}).values():
            b = (float(band[0]), None if band[1] is None else float(band[1]))
            if b not in out:
                out.append(b)
    return out


def band_densities(trial: Path, bands: Sequence[Band]) -> dict[str, float]:
    """{metric name: density} of each band the trial's packets enter; a compact twin's (no raw
    traces) from its claims-input.json (analysis/claims_input.py), for the bands it holds."""
    if not claims_input.has_raw(trial):
        stored = claims_input.stored(trial, "owd_band_densities") or {}
        return {metric_name(b): float(stored[metric_name(b)]) for b in bands if metric_name(b) in stored}
    owd = owd_samples(trial)
    return {metric_name(b): d for b in bands if (d := density(owd, b)) is not None}


@functools.cache
def _claims_bands() -> tuple[Band, ...]:
    """The bands the paper's claims name (config/collateral.yaml), read once per process."""
    return tuple(claim_bands(load_paper(CONFIG_DIR / "collateral.yaml").data["reference"]["claims"]))


def claim_densities(trial: Path) -> dict[str, float]:
    """band_densities over every band the paper's claims name."""
    return band_densities(trial, _claims_bands())


def with_band_metrics(results: Path, cells: dict[str, dict[str, Any]],
                      bands: Sequence[Band]) -> dict[str, dict[str, Any]]:
    """The cells with each band's density merged into their `metrics` (per valid trial, then the
    papers' trimmed mean)."""
    if not bands:
        return cells
    return with_trial_metrics(results, cells, ("spec.json", "provenance.json"),
                              lambda trial: band_densities(trial, bands))
