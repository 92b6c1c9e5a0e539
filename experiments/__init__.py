"""experiments: each paper's config loaded and checked against what this project can run.

configuration.load reads and validates a paper's YAML on its own; the rules that need a higher
layer's knowledge come from here: the congestion-control registry (cc/registry.py) names the
algorithms a bulk flow may run and their parameters, and a simulated scenario's model (sim/build.py,
its adapter) says what it refuses and which flows it runs. Every caller that needs a paper's cells
or trial specs loads it through load_paper here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from cc.registry import CcUnavailable, bpf_params, entry, registry
from configuration import folders
from configuration.load import (
    CONFIG_DIR,
    ConfigError,
    PaperConfig,
    ScenarioRules,
    check_workflow,
    merge,
    parse_yaml,
    read,
)
from configuration.load import load_paper as _load_paper
from sim.build import adapter


def check_flow(flow: dict[str, Any], where: str) -> None:
    """A bulk flow names an algorithm of the registry, an implementation it knows, and parameters
    its BPF object takes."""
    known = registry()
    if flow["cc"] not in known:
        raise ConfigError(f"{where}.cc: unknown congestion control {flow['cc']!r}; known: "
                          f"{', '.join(known)} (add it to config/congestion_controls.yaml)")
    if flow.get("cc_impl") not in (None, "builtin", "module", "bpf"):
        raise ConfigError(f"{where}.cc_impl: {flow['cc_impl']!r} is not builtin, module or bpf")
    if flow.get("cc_params") or flow.get("cc_impl") == "bpf":
        try:
            bpf_params(flow["cc"], flow.get("cc_params"))
        except CcUnavailable as exc:
            raise ConfigError(f"{where}.cc_params: {exc}") from None


def settle_module_params(scenario: dict[str, Any], where: str) -> None:
    """Keep of scenario.module_params only what changes this cell's trial: parameters of an algorithm
    its bulk flows run, with a value other than the registry's. A cell that asks for the registry's
    own settings then has the same spec as one that does not mention them."""
    asked = scenario.pop("module_params", None) or {}
    used = {f["cc"] for f in scenario["flows"] if f["kind"] == "bulk" and int(f.get("count", 1))}
    kept: dict[str, dict[str, int]] = {}
    for cc, params in asked.items():
        try:
            entry(cc, params)           # an unknown algorithm or parameter is an error
        except CcUnavailable as exc:
            raise ConfigError(f"{where}.module_params.{cc}: {exc}") from None
        defaults = entry(cc).get("module_params") or {}
        changed = {k: int(v) for k, v in params.items() if int(v) != int(defaults[k])}
        if cc in used and changed:
            kept[cc] = changed
    if kept:
        scenario["module_params"] = kept


def check_simulated(scenario: dict[str, Any], where: str) -> None:
    """Rules the schema cannot say, from the scenario's model (sim/build.py, its adapter)."""
    found = adapter(scenario["model"]).problems(scenario)
    if found:
        field, what = found[0]
        raise ConfigError(f"{where}.{field}: {what}" if field else f"{where}: {what}")


def simulated_flows(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """A simulated scenario's flows, as its model's adapter lists them."""
    flows: list[dict[str, Any]] = adapter(scenario["model"]).flows(scenario)
    return flows


RULES = ScenarioRules(check_flow=check_flow, settle_module_params=settle_module_params,
                      check_simulated=check_simulated, simulated_flows=simulated_flows)


def load_paper(name_or_path: str | Path) -> PaperConfig:
    """config/<paper>.yaml (or a path), loaded and checked against RULES; ConfigError names the bad field."""
    return _load_paper(name_or_path, RULES)


def check_config_file(path: Path) -> str:
    """Check one config file before a run: a paper config (it has `paper:`) as load_paper does, any
    other YAML as a workflow config file (`snakemake --configfile`, which Snakemake parses before
    the workflow's code runs and reports without the line), merged over config/workflow.yaml.
    Returns what was checked; raises ConfigError."""
    data = parse_yaml(read(path), path)
    if isinstance(data, dict) and "paper" in data:
        cfg = load_paper(path.resolve())
        return f"{path}: paper {cfg.name}, {len(cfg.cells_by_id)} cells"
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file holds keys at its top level")
    defaults = parse_yaml((CONFIG_DIR / "workflow.yaml").read_bytes(), CONFIG_DIR / "workflow.yaml")
    merged = merge(defaults, data)
    check_workflow(merged, where=str(path))
    # where it may write, judged as the workflow will (relative folders from here)
    folders.check(merged, Path.cwd(), str(path))
    return f"{path}: workflow config, keys {', '.join(data) or '(none)'}"
