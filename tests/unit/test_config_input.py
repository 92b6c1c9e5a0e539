"""Hostile config input is refused at load with one line naming the field, never a hang, a traceback
or a value that reaches a booted guest: non-finite and out-of-range numbers in every numeric field of
the real paper configs, duplicate keys, alias bombs, devices and oversized files."""
from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from configuration import CHECKOUT, yaml_input
from configuration.load import ConfigError, check_workflow, load_workflow, paper_names
from experiments import load_paper

CHECKED = ("scenario", "matrix", "extra_matrices", "matrix_defaults", "profiles")   # what a trial runs


def numeric_leaves(node: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from numeric_leaves(v, (*at, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from numeric_leaves(v, (*at, i))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield at


def with_value(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy with one field changed (aliases written out, so the change touches that field only)."""
    out = json.loads(json.dumps(data))
    node = out
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return out


def dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def write(tmp_path: Path, data: dict[str, Any], name: str = "variant.yaml") -> Path:
    p = tmp_path / name
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    p.write_text(yaml.dump(data, Dumper=dumper, sort_keys=False))
    return p


@pytest.mark.parametrize("paper", paper_names())
def test_a_non_finite_number_anywhere_is_refused_naming_its_field(paper: str, tmp_path: Path) -> None:
    data = yaml.safe_load(load_paper(paper).path.read_text())
    leaves = list(numeric_leaves(data))
    assert len(leaves) > 20
    # a seeded sample of every kind of field the paper has (each run the same, each paper its own)
    for i, path in enumerate(random.Random(f"{paper}-nan").sample(leaves, 30)):
        bad = (math.nan, math.inf, -math.inf)[i % 3]
        with pytest.raises(ConfigError) as err:
            load_paper(write(tmp_path, with_value(data, path, bad)))
        assert f"field '{dotted(path)}'" in str(err.value) and "not a finite number" in str(err.value)
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("paper", paper_names())
def test_a_huge_or_negative_setting_is_refused_or_stays_bounded(paper: str, tmp_path: Path) -> None:
    """Random settings a trial runs, set to hostile finite values: refused at load in one line, or
    (where the field takes any number, e.g. a sysctl's value) every cell's numbers stay finite."""
    data = yaml.safe_load(load_paper(paper).path.read_text())
    leaves = [p for p in numeric_leaves(data) if p[0] in CHECKED]
    rng = random.Random(f"{paper}-hostile")
    for path in rng.sample(leaves, min(12, len(leaves))):
        bad = rng.choice([1e308, -1e308, 2 ** 70, -1, 10 ** 30, 1e-300])
        try:
            cfg = load_paper(write(tmp_path, with_value(data, path, bad)))
        except ConfigError as err:
            assert "\n" not in str(err) and str(tmp_path) in str(err)
            continue
        for cell in cfg.cells_by_id.values():
            for leaf in numeric_leaves(cell.scenario):
                v = cell.scenario
                for k in leaf:
                    v = v[k]
                assert math.isfinite(v) and abs(v) <= 10 ** 12, (path, leaf, v)


def test_duplicate_keys_are_refused_with_both_lines(tmp_path: Path) -> None:
    p = tmp_path / "dup.yaml"
    p.write_text("paper: x\ntitle: a\nmatrix: {}\ntitle: b\n")
    with pytest.raises(ConfigError, match=r"dup.yaml:4:1: not valid YAML: key 'title' given twice \(first on line 2\)"):
        load_paper(p)
    # a merge key's keys are overridden by the mapping's own, as YAML means it
    assert yaml_input.parse(b"base: &b {a: 1, b: 2}\nc:\n  <<: *b\n  a: 3\n", "m") == \
        {"base": {"a": 1, "b": 2}, "c": {"a": 3, "b": 2}}


def run_check_config(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tcprepro", "check-config", str(path)], cwd=CHECKOUT,
                          capture_output=True, text=True, timeout=60, check=False)


def test_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    assert bomb.stat().st_size < 2000
    r = run_check_config(bomb)
    assert r.returncode == 2 and "aliases expand to more than" in r.stderr and len(r.stderr) < 500
    assert "Traceback" not in r.stderr


def test_a_device_a_fifo_and_a_huge_file_are_refused(tmp_path: Path) -> None:
    r = run_check_config(Path("/dev/zero"))
    assert r.returncode == 2 and "/dev/zero: not a regular file" in r.stderr
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    assert "not a regular file" in run_check_config(fifo).stderr
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * yaml_input.MAX_BYTES + "\n")
    r = run_check_config(big)
    assert r.returncode == 2 and "larger than 1024 KiB" in r.stderr


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_the_workflow_config_refuses_non_finite_numbers(bad: float) -> None:
    config = {**load_workflow(), "cluster": {**load_workflow()["cluster"], "wall_s_per_virtual_s": bad}}
    with pytest.raises(ConfigError, match=r"field 'cluster.wall_s_per_virtual_s': .* is not a finite number"):
        check_workflow(config, where="--config")


def test_a_whole_number_written_as_a_float_is_refused_where_an_integer_is_asked(tmp_path: Path) -> None:
    """YAML's `1.0` stays a float, which a profile's trial count (a range) does not take."""
    data = yaml.safe_load(load_paper("wlan").path.read_text())
    with pytest.raises(ConfigError, match=r"field 'profiles.smoke.trials': 1.0 is not of type 'integer'"):
        load_paper(write(tmp_path, with_value(data, ("profiles", "smoke", "trials"), 1.0)))
