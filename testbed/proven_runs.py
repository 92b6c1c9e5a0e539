"""A simulated trial whose run is provably a finished trial's run is taken from it, not simulated again.

A deterministic model given the same command line, binary and RNG run makes the same run. Some
parameters go further: they reach the run only through decisions a finished run shows it took one
way only. The 802.11b model's M_t is read only by ns-3's retry decision, and a run in which no frame
was given up decided "retransmit" every time; under a larger M_t every one of those decisions is
again "retransmit", so that run is, event for event, the same (sim/wlan/README.md, "Runs proven
equal"). The model's adapter states such a proof (`proving_scenarios`, `proof`, `carried_over`);
this module finds a finished trial that satisfies it, per trial, never per cell: the same RNG run,
duration and metric window, the same binary, and the proof read from that trial's own raw output.

The trial then gets that run's raw output, with the fields that name the differing parameter
rewritten, and every check and metric is computed on it as for a simulated run. Its provenance
records `derived`: the trial it came from, the digest of that trial's raw output, the proof as read,
and each rewritten field. TCPREPRO_SIMULATE_ALL=1 simulates every run (the tests use it to show a
derived trial equal to the run it stands for).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from configuration import environment

SAME = ("trial", "duration_s", "warmup_s")


@dataclass(frozen=True)
class Proven:
    """A finished trial whose run is the new trial's run, and why."""

    trial_dir: Path
    raw: dict[str, Any]
    raw_sha256: str
    proof: str

    def source(self) -> str:
        return f"{self.trial_dir.parent.name}/{self.trial_dir.name}"


def enabled() -> bool:
    return environment.get("TCPREPRO_SIMULATE_ALL") not in ("1", "true", "yes")


def find(spec: dict[str, Any], partial: Path, binary_sha256: str, adapter: ModuleType) -> Proven | None:
    """The finished trial beside `partial` (results/<profile>/<paper>/<cell>/trial-<k>.partial) that
    proves its run is this spec's, preferring the adapter's order; None when there is none."""
    proving = getattr(adapter, "proving_scenarios", None)
    if proving is None or not enabled():
        return None
    wanted = [json.dumps(s, sort_keys=True) for s in proving(spec["scenario"])]
    if not wanted:
        return None
    trial_name = partial.name.removesuffix(".partial")
    found: dict[str, Proven] = {}
    for spec_path in partial.parent.parent.glob(f"*/{trial_name}/spec.json"):
        candidate = _candidate(spec_path.parent, spec, wanted, binary_sha256, adapter)
        if candidate is not None:
            found[candidate[0]] = candidate[1]
    return next((found[w] for w in wanted if w in found), None)


def _candidate(d: Path, spec: dict[str, Any], wanted: list[str], binary_sha256: str,
               adapter: ModuleType) -> tuple[str, Proven] | None:
    try:
        other = json.loads((d / "spec.json").read_text())
        scenario = json.dumps(other.get("scenario"), sort_keys=True)
        if scenario not in wanted or any(other.get(k) != spec.get(k) for k in SAME):
            return None
        if not (d / "summary.json").exists():
            return None
        prov = json.loads((d / "provenance.json").read_text())
        if (prov.get("simulator") or {}).get("binary_sha256") != binary_sha256:
            return None
        text = (d / adapter.RAW).read_bytes()
        raw = json.loads(text)
    except (OSError, ValueError):
        return None
    proof = adapter.proof(raw) if isinstance(raw, dict) else None
    if proof is None:
        return None
    return scenario, Proven(d, raw, hashlib.sha256(text).hexdigest(), proof)


def take(proven: Proven, spec: dict[str, Any], partial: Path, adapter: ModuleType) -> tuple[dict[str, Any],
                                                                                            dict[str, Any]]:
    """Write the proven run's raw output, as this spec's, into `partial`; (the raw output, provenance's
    `derived`)."""
    raw, rewritten = adapter.carried_over(proven.raw, spec["scenario"])
    (partial / adapter.RAW).write_text(json.dumps(raw, indent=1) + "\n")
    return raw, {"from": proven.source(), "raw_sha256": proven.raw_sha256, "proof": proven.proof,
                 "rewritten": rewritten}
