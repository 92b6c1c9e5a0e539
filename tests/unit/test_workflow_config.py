"""The workflow's own config (config/workflow.yaml + a profile's config: + --config) is checked
against config/schema/workflow.schema.yaml before anything runs; each error is one line naming the
field and the fix."""
from __future__ import annotations

import re

import pytest
import yaml

from configuration.load import CONFIG_DIR, ConfigError, check_config_args, check_workflow, load_workflow
from experiments import check_config_file
from testbed.run import max_attempts


def defaults() -> dict:
    return yaml.safe_load((CONFIG_DIR / "workflow.yaml").read_text())


def cluster(**change: object) -> dict:
    return {**defaults()["cluster"], **change}


def test_the_committed_defaults_pass() -> None:
    assert load_workflow()["max_attempts"] >= 1


@pytest.mark.parametrize(("change", "says"), [
    ({"papres": ["wlan"]}, "unknown key 'papres' (did you mean 'papers'?)"),
    ({"vm_lanes": -3}, "field 'vm_lanes': -3 is less than the minimum of 1"),
    ({"max_attempts": -1}, "field 'max_attempts': -1 is less than the minimum of 1"),
    ({"max_attempts": 0}, "field 'max_attempts': 0 is less than the minimum of 1"),
    ({"max_attempts": "abc"}, "field 'max_attempts': 'abc' is not of type 'integer'"),
    ({"max_attempts": 3.0}, "field 'max_attempts': 3.0 is not of type 'integer'"),
    ({"cluster": cluster(runtime_floor_min=1e3)}, "field 'cluster.runtime_floor_min': 1000.0 is not of type 'integer'"),
    ({"profile": "medium"}, "field 'profile': 'medium' is not one of ['smoke', 'quick', 'full']"),
    ({"papers": ["wlna"]}, "no paper 'wlna' (did you mean 'wlan'?)"),
    ({"papers": ["workflow"]}, "no paper 'workflow'"),
    ({"cells": "x;touch /tmp/pwned"}, "field 'cells'"),
    ({"bulk_generator": "netperf"}, "field 'bulk_generator'"),
    ({"cluster": {"runtime_floor_min": 10, "wall_s_per_virtual_s": 0, "mem_mb": {"uml": 2048, "sim": 1024,
                                                                             "uml_kernel": 4096, "figures": 4096}}},
     "field 'cluster.wall_s_per_virtual_s'"),
    ({"cluster": {"runtime_floor_min": 10, "wall_s_per_virtual_s": 4, "mem_mb": {"uml": 2048}}},
     "field 'cluster.mem_mb'"),
    ({"cluster": cluster(wall_s_per_virtual_s=1e308)},
     "field 'cluster.wall_s_per_virtual_s': 1e+308 is greater than the maximum of 100"),
    ({"cluster": cluster(runtime_floor_min=10 ** 30)},
     "field 'cluster.runtime_floor_min': 1000000000000000000000000000000 is greater than the maximum of 1440"),
    ({"cluster": cluster(mem_mb={"uml": 2048, "sim": 1024, "uml_kernel": 4096, "figures": 2 ** 70})},
     "field 'cluster.mem_mb.figures': 1180591620717411303424 is greater than the maximum of 1048576"),
])
def test_a_bad_workflow_value_is_named_in_one_line(change: dict, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        check_workflow({**defaults(), **change})
    assert says in str(err.value) and "\n" not in str(err.value)


def test_attempts_below_one_are_refused_wherever_they_come_from(monkeypatch) -> None:
    monkeypatch.delenv("TCPREPRO_MAX_ATTEMPTS", raising=False)
    assert max_attempts(None) == defaults()["max_attempts"]
    assert max_attempts(3) == 3
    with pytest.raises(ConfigError, match="--max-attempts: '0'"):
        max_attempts(0)
    monkeypatch.setenv("TCPREPRO_MAX_ATTEMPTS", "-1")
    with pytest.raises(ConfigError, match="TCPREPRO_MAX_ATTEMPTS: '-1'"):
        max_attempts(None)


def test_a_config_file_s_yaml_error_is_named_by_line(tmp_path) -> None:
    """Snakemake parses `--configfile` before the workflow runs and names neither file nor line:
    `tcprepro check-config` does."""
    from tcprepro.cli import main

    bad = tmp_path / "mine.yaml"
    bad.write_text("profile: quick\npapers: [wlan\nvm_lanes: 2\n")
    out_of_range = tmp_path / "lanes.yaml"
    out_of_range.write_text("vm_lanes: 0\n")
    with pytest.raises(ConfigError, match=rf"^{bad}:3:9: not valid YAML: expected ',' or ']'"):
        check_config_file(bad)
    with pytest.raises(ConfigError, match=rf"^{out_of_range}: field 'vm_lanes': 0 is less than the minimum of 1"):
        check_config_file(out_of_range)
    assert check_config_file(CONFIG_DIR / "collateral.yaml").endswith("paper collateral, 42 cells")
    assert main(["check-config", str(bad), str(CONFIG_DIR / "collateral.yaml")]) == 2


def test_check_config_merges_a_config_file_as_snakemake_does(tmp_path) -> None:
    """Snakemake merges a --configfile's mappings into the config key by key: one cluster setting
    alone is a whole config, and check-config judges it so."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("cluster:\n  mem_mb: {uml: 4096}\n")
    assert check_config_file(mine).endswith("keys cluster")
    mine.write_text("cluster:\n  mem_mb: {uml: 100}\n")
    with pytest.raises(ConfigError, match=r"field 'cluster\.mem_mb\.uml': 100 is less than the minimum of 256"):
        check_config_file(mine)


@pytest.mark.parametrize(("text", "parsed"), [
    ("/tmp/run #2", "/tmp/run"),            # a YAML comment
    ("&a x", "x"),                          # a YAML anchor
    ("/tmp/it's'", "/tmp/it's"),            # Snakemake strips quotes at both ends
])
def test_a_config_value_snakemake_changed_is_refused(text: str, parsed: str) -> None:
    """Snakemake strips a --config value's quotes and reads it as YAML: a results folder named with
    ' #' would be another folder."""
    with pytest.raises(ConfigError) as err:
        check_config_args(["profile=smoke", f"results={text}"], {"profile": "smoke", "results": parsed})
    assert str(err.value).startswith(f"--config results={text!r}: ") and f"makes it {parsed!r}" in str(err.value)
    check_config_args([f"results='{parsed}'", "max_attempts=3"], {"results": parsed, "max_attempts": 3})
    check_config_args(None, {"results": parsed})


def test_usage_documents_exactly_the_keys_the_schema_accepts() -> None:
    """docs/usage.md's table of the workflow's keys: every key the schema accepts, and no other (a
    documented key the schema refuses stops the run that follows the docs)."""
    schema = yaml.safe_load((CONFIG_DIR / "schema" / "workflow.schema.yaml").read_text())
    usage = (CONFIG_DIR.parent / "docs" / "usage.md").read_text()
    table = usage[usage.index("| key | what it sets |"):].split("\n\n", 1)[0]
    documented = {key for row in table.splitlines()[2:] for key in re.findall(r"`(\w+)`", row.split("|")[1])}
    assert documented == set(schema["properties"])
