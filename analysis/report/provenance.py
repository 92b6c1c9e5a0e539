"""provenance.json beside a paper's figures: what the trials ran on and how they fared, small enough
to commit with reference results (the raw trials stay in results/).

Kernel releases and where they ran (host, or the pinned VM and its accelerator); each congestion
control's implementation (builtin, module with its file hash, BPF object hash); for simulated papers
the simulator and the model binary's hash; tool versions; the
idle RTT after calibration; per fidelity check how many trials passed, failed or could not measure
it; how many attempts were invalid and rerun, and which trials no attempt made valid; and whether
each trial ran what the paper's config now describes (`config`: analysis/staleness.py).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from analysis import staleness
from analysis.report.paper_run import PaperRun
from configuration.load import ConfigError
from sim.build import sources_sha256
from sim.equivalence import same_sources

SCHEMA = "tcprepro.provenance-summary/1"


def _trial_dirs(run: PaperRun) -> list[Path]:
    """Every trial directory of the run's cells: valid ones and the ones the cell excluded."""
    dirs = []
    for cell_id, cell in sorted(run.cells.items()):
        dirs += [run.results / cell_id / f"trial-{k}" for k in cell.get("trials", [])]
        dirs += [run.results / cell_id / Path(e["dir"]).name for e in cell.get("excluded", []) if e.get("dir")]
    return dirs


def config_check(run: PaperRun) -> dict[str, Any]:
    """The valid trials' recorded specs against what the paper's config now gives for their cells:
    the config's hash, how many trials came from another version of the file, the stale trials
    (their spec differs) with the fields that differ, and per cell what its trials ran (a digest,
    so that a later check against a changed config needs no trial)."""
    stale: dict[str, str] = {}
    ran: dict[str, list[str]] = {}
    other = equivalent = unnamed = 0
    model_sources = _model_sources(run)
    implicit = run.cfg.data.get("implicit_before_named") or {}
    for cell_id in sorted(run.cells):
        digests = set()
        for trial in run.valid_trials(cell_id):
            path = trial / "spec.json"
            if not path.exists():
                continue
            recorded = json.loads(path.read_text())
            digests.add(staleness.digest(recorded, implicit))
            if implicit and staleness.with_implicit(recorded, implicit) != recorded:
                unnamed += 1
            other += recorded.get("config_sha256") != run.cfg.sha256
            try:
                current = run.cfg.trial_spec(cell_id, int(recorded.get("trial", 1)), run.profile)
            except ConfigError:
                continue                # a profile the config does not have (a test's)
            diffs = staleness.differences(recorded, current, implicit)
            ran_sources = _ran_sources(trial) if model_sources else None
            if model_sources and ran_sources and ran_sources != model_sources:
                if _equivalent(run, ran_sources, model_sources):
                    equivalent += 1
                else:
                    diffs.append(("model sources (sha256)", ran_sources[:16], model_sources[:16]))
            if diffs:
                stale[f"{cell_id}/{trial.name}"] = staleness.describe(diffs)
        if digests:
            ran[cell_id] = sorted(digests)
    out = {"config_sha256": run.cfg.sha256, "trials_from_other_config_versions": other,
           "stale_trials": stale, "cell_specs": ran}
    if equivalent:
        out["trials_of_equivalent_model_sources"] = equivalent
    if unnamed:
        out["trials_read_with_implicit_fields"] = unnamed
    return out


def _equivalent(run: PaperRun, ran: str, current: str) -> bool:
    """Sources a rerun of archived trials showed to give the current sources' output (sim/equivalence.py)."""
    return same_sources(run.cfg.data["scenario"]["model"], ran, current)


def _model_sources(run: PaperRun) -> str | None:
    """A simulated paper's model sources as the checkout holds them (None for a measured paper)."""
    if not run.cfg.simulated:
        return None
    return sources_sha256(run.cfg.data["scenario"]["model"])


def _ran_sources(trial: Path) -> str | None:
    """The model sources a simulated trial ran, from its provenance."""
    path = trial / "provenance.json"
    if not path.exists():
        return None
    return (json.loads(path.read_text()).get("simulator") or {}).get("sources_sha256")


def stale_lines(check: dict[str, Any]) -> list[str]:
    """verdict.md's account of it: stale trials named with what changed, or that there are none."""
    stale = check.get("stale_trials") or {}
    if not stale:
        other = check.get("trials_from_other_config_versions", 0)
        equivalent = check.get("trials_of_equivalent_model_sources", 0)
        unnamed = check.get("trials_read_with_implicit_fields", 0)
        return ["Every valid trial ran what the paper's config now describes for its cell"
                + (f" ({other} came from an earlier version of the config file whose differences do not "
                   "touch what they ran)." if other else ".")
                + (f" {equivalent} ran earlier model sources that reruns of archived trials showed to give the "
                   "current sources' output field for field (sim/equivalence.py, equivalent_sources.yaml "
                   "beside the model)." if equivalent else "")
                + (f" {unnamed} recorded a spec from before a field was named, read with the value they ran without "
                   "naming it (the config's implicit_before_named)." if unnamed else ""), ""]
    out = [f"**Stale: {len(stale)} valid trial(s) ran something other than the paper's config now describes**; "
           "every number built from them is from the recorded spec, not the current one:", ""]
    out += [f"- {trial}: {what}" for trial, what in sorted(stale.items())[:20]]
    if len(stale) > 20:
        out.append(f"- and {len(stale) - 20} more (provenance.json: config.stale_trials)")
    return [*out, ""]


def summarize(run: PaperRun) -> dict[str, Any]:
    kernels: Counter[str] = Counter()
    where: Counter[str] = Counter()
    ccs: dict[str, set[str]] = {}
    tools: dict[str, set[str]] = {}
    checks: dict[str, Counter[str]] = {}
    calib: list[float] = []
    busy: list[float] = []
    configs: set[str] = set()
    simulators: Counter[str] = Counter()
    invalid_attempts = reran = 0
    for d in _trial_dirs(run):
        prov_path, summary_path = d / "provenance.json", d / "summary.json"
        if not prov_path.exists():
            continue
        prov = json.loads(prov_path.read_text())
        k = prov.get("kernel", {})
        kernels[k.get("release", "?")] += 1
        where[f"{k.get('where')}" + (f" ({k['accel']})" if k.get("accel") else "")] += 1
        for cc in (prov.get("congestion_controls") or {}).values():
            sha, params = cc.get("object_sha256"), cc.get("params")
            ccs.setdefault(cc["name"], set()).add(
                f"{cc['impl']} {cc['kernel_name']}" + (f" {json.dumps(params, sort_keys=True)}" if params else "")
                + (f" sha256:{sha[:16]}" if sha else ""))
        for tool, version in (prov.get("tools") or {}).items():
            tools.setdefault(tool, set()).add(version)
        for c in prov.get("fidelity") or []:
            verdict = {True: "pass", False: "fail", None: "not measured"}[c.get("pass")]
            checks.setdefault(c["name"], Counter())[verdict] += 1
        rounds = (prov.get("calibration") or {}).get("rounds") or []
        if rounds:
            calib.append(float(rounds[-1]["base_rtt_ms"]))
        if isinstance((prov.get("cpu_during_traffic") or {}).get("busy"), float | int):
            busy.append(float(prov["cpu_during_traffic"]["busy"]))
        if prov.get("simulator"):
            sim = prov["simulator"]
            simulators[f"{sim.get('version')} ({sim.get('package')}), {sim.get('binary')} "
                       f"sha256:{str(sim.get('binary_sha256'))[:16]}"] += 1
        if prov.get("config_sha256"):
            configs.add(prov["config_sha256"])
        if summary_path.exists():
            s = json.loads(summary_path.read_text())
            invalid_attempts += int(s.get("invalid_attempts") or 0)
            reran += int(bool(s.get("invalid_attempts")))
    cells = run.cells.values()
    return {
        "schema": SCHEMA,
        "paper": run.cfg.name,
        "profile": run.profile,
        "cells": len(run.cells),
        "trials_valid": sum(c.get("n_valid", 0) for c in cells),
        "trials_expected": sum(c.get("expected_trials", 0) for c in cells),
        "trials_never_valid": sorted(f"{c.get('cell')}/trial-{e.get('trial')}" for c in cells
                                     for e in c.get("excluded", [])),
        "invalid_attempts_rerun": invalid_attempts,
        "trials_rerun": reran,
        "kernels": dict(kernels),
        "where": dict(where),
        "congestion_controls": {k: sorted(v) for k, v in sorted(ccs.items())},
        **({"simulators": dict(simulators)} if simulators else {}),
        "tools": {k: sorted(v) for k, v in sorted(tools.items())},
        "fidelity_checks": {k: dict(v) for k, v in sorted(checks.items())},
        "base_rtt_ms_after_calibration": [round(min(calib), 3), round(max(calib), 3)] if calib else None,
        "cpu_busy_during_traffic": [min(busy), max(busy)] if busy else None,
        "config_sha256": sorted(configs),
        "config": config_check(run),
    }


def write(run: PaperRun) -> list[Path]:
    path = run.out / "provenance.json"
    path.write_text(json.dumps(summarize(run), indent=1) + "\n")
    return [path]
