"""Stale results: trials that ran something other than what the paper's config now describes.

A trial records its full spec (spec.json: the cell's scenario, parameters, durations, flows) and the
SHA-256 of the config file it came from. The file's hash changes with any edit, a claim's wording
included, so it only says that something changed; comparing the recorded spec with the one the
current config gives for the same cell says what, field by field. A trial is stale when the two
differ; results built from it are flagged wherever they are shown (verdict.md, REPORT.md,
`tcprepro diff`).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

# Fields of a spec that are not about what the config asked for: its index, the config file's hash,
# the lane placement chose and what a lane adds (the virtual-time lane's seeded variation,
# testbed/variation.py), and the matrix point (`params`): labels and the values substituted into the
# scenario, which holds what they set.
NOT_RUN = ("trial", "config_sha256", "lane", "variation", "params")


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{dotted path: leaf value} of nested dicts and lists (list items as path[i])."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out |= flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out |= flatten(v, f"{prefix}[{i}]")
        return out
    return {prefix: value}


def with_implicit(spec: dict[str, Any], implicit: Mapping[str, Any]) -> dict[str, Any]:
    """The spec with each field of `implicit` (dotted path: value; a paper config's
    implicit_before_named) that it lacks set to the value its trial ran without naming it."""
    out = json.loads(json.dumps(spec))
    for path, value in implicit.items():
        *parents, leaf = path.split(".")
        node = out
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.setdefault(leaf, value)
    return out


def what_ran(spec: dict[str, Any], implicit: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The spec as the config gave it: a flow whose start a lane offset keeps its configured start;
    the bulk generator only where a timed bulk flow ran it (fixed-size transfers run iperf2
    whatever it says). A trial whose
    flows are all fixed-size transfers ends when they do: its duration_s is a guard against a hung
    trial, and a valid one finished inside it, so the bound is not what it ran. A field added to
    the config later counts with the value `implicit` gives it where the spec lacks it."""
    spec = with_implicit(spec, implicit) if implicit else spec
    out = {k: v for k, v in spec.items() if k not in NOT_RUN}
    bulk = [f for f in out.get("flows") or [] if f.get("kind") == "bulk"]
    timed = any(not f.get("bytes") for f in bulk)
    if bulk and not timed and len(bulk) == len(out.get("flows") or []):
        out.pop("duration_s", None)
        if isinstance(out.get("scenario"), dict):
            out["scenario"] = {k: v for k, v in out["scenario"].items() if k != "duration_s"}
    if not timed or "warmup_s" in out:
        out.pop("bulk_generator", None)
    if "flows" in out:
        out["flows"] = [{**{k: v for k, v in f.items() if k != "start_s_configured"},
                         **({"start_s": f["start_s_configured"]} if "start_s_configured" in f else {})}
                        for f in out["flows"]]
    return out


def digest(spec: dict[str, Any], implicit: Mapping[str, Any] | None = None) -> str:
    """A short hash of what a trial runs (equal for every trial of an unchanged cell)."""
    return hashlib.sha256(json.dumps(what_ran(spec, implicit), sort_keys=True).encode()).hexdigest()[:16]


def differences(recorded: dict[str, Any], current: dict[str, Any],
                implicit: Mapping[str, Any] | None = None) -> list[tuple[str, Any, Any]]:
    """(path, recorded value, current value) for every field that differs; absent is None."""
    a, b = flatten(what_ran(recorded, implicit)), flatten(what_ran(current, implicit))
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def describe(diffs: list[tuple[str, Any, Any]], limit: int = 6) -> str:
    """'scenario.x: 5 -> 6; ...' for the first `limit` differences."""
    parts = [f"{k}: {_show(a)} -> {_show(b)}" for k, a, b in diffs[:limit]]
    more = f"; and {len(diffs) - limit} more" if len(diffs) > limit else ""
    return "; ".join(parts) + more


def _show(v: Any) -> str:
    return "(absent)" if v is None else json.dumps(v)


def result_set_lines(provenance: dict[str, Any], config_name: str, config_sha256: str,
                     current_spec: Callable[[str], dict[str, Any] | None]) -> list[str]:
    """What a result set (figures/<paper>/<profile>/) says of its trials against the paper's config
    now: stale cells (the spec its trials ran differs from `current_spec(cell)`, None for a cell the
    config no longer has) with the fields found when it was made; where it recorded no specs, only
    whether its trials came from another version of the config file. Empty when nothing is stale."""
    check = provenance.get("config")
    if check is None:
        shas = provenance.get("config_sha256") or []
        if shas and any(s != config_sha256 for s in shas):
            return [f"Its trials came from another version of {config_name} (sha256 "
                    f"{', '.join(s[:12] for s in shas)}; now {config_sha256[:12]}), and the result set does not "
                    "record what they ran: whether any field they ran differs cannot be told from it."]
        return []
    stale = []
    for cell_id, ran in sorted((check.get("cell_specs") or {}).items()):
        spec = current_spec(cell_id)
        if spec is None or ran != [digest(spec)]:
            stale.append(cell_id)
    if not stale:
        return []
    fields = check.get("stale_trials") or {}
    found = ("; fields, when the result set was made: " + "; ".join(f"{t}: {w}" for t, w in list(fields.items())[:3])
             if fields else "; regenerate the result set to see which fields differ")
    return [f"Stale: {len(stale)} cell(s) ran another spec than {config_name} gives now: "
            f"{', '.join(stale[:12])}{' ...' if len(stale) > 12 else ''}{found}."]
