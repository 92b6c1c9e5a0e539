"""Hostile values in every numeric and path key of the workflow config (config/workflow.yaml's keys,
as a --configfile, `--config KEY=VALUE` or a profile's `config:` sets them), through the real entry
points: `tcprepro check-config` and `snakemake -n`. Each value is refused at load in one line naming
its key, or accepted, sane, and planned where it says; nothing is written outside the results and
figures folders given (a scratch root, its $HOME and $TMPDIR, and the checkout, listed before and
after). Seeded: every run feeds the same values."""
from __future__ import annotations

import math
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from snakemake.cli import parse_config

from configuration import CHECKOUT
from configuration.load import WORKFLOW_SCHEMA_PATH
from testbed.run import max_attempts

SCHEMA = yaml.safe_load(WORKFLOW_SCHEMA_PATH.read_text())
PATHS = ("results", "figures")
# Not numbers or paths: fed hostile text too.
WORDS = ("profile", "papers", "cells", "robustness", "kernel", "bulk_generator", "module_params")
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
BASE = {"profile": "smoke", "papers": ["wlan"]}                # the cheapest plan: one simulated cell
NUMBERS: list[Any] = [math.nan, math.inf, -math.inf, 1e308, -1e308, 2 ** 70, -(2 ** 70), 10 ** 30, -1, 0, 1e-300,
                      3.0, 2.5, True, "3", "", "３", None, [1], {"a": 1}]
WORD_VALUES: list[Any] = ["", "..", "../../etc/passwd", "wlan/../collateral", "wlan; touch PWNED", "é☃", "a b",
                          "'\"", "x" * 5000, "*", 3, math.nan, None, [], ["wlan", "wlan"], ["../x"], ["WLAN"],
                          {"a": 1}]
SEGMENTS = ["..", "..", "..", ".", " ", "a b", "it's", 'say "hi"', "é☃", "日本", "-rf", "*", "?", "[x]", "$HOME",
            "~", "%s", "\\", ";rm -rf ~", "{x}", "}", "\n", "\t", "\x00", "x" * 300, "#1", " #1", "a #b", "'", "new"]
# Snakemake's own parsing of --config ends in an AssertionError for a value YAML reads as nothing (a
# leading '#'); argv cannot hold a NUL. Those values reach the workflow through a --configfile only.
NOT_ARGV = re.compile(r"^\s*#|\x00")
CACHES = {".git", ".venv", ".snakemake", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}


@dataclass(frozen=True, eq=False)             # each case its own, whatever its value
class Case:
    key: tuple[str, ...]
    value: Any

    @property
    def name(self) -> str:
        return ".".join(self.key)

    def config(self, scratch: Path) -> dict[str, Any]:
        """The whole config a run gets: cheap defaults, harmless folders, and this one value."""
        out: dict[str, Any] = {**BASE, "results": str(scratch / "r"), "figures": str(scratch / "f")}
        node = out
        for k in self.key[:-1]:
            node = node.setdefault(k, {})
        node[self.key[-1]] = self.value
        return out


def numeric_keys(props: dict[str, Any], at: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict]]:
    """Every integer or number field of the schema, at any depth, with its schema."""
    for name, sub in props.items():
        if sub.get("type") in ("integer", "number"):
            yield (*at, name), sub
        elif sub.get("type") == "object":
            yield from numeric_keys(sub.get("properties", {}), (*at, name))


NUMERIC = dict(numeric_keys(SCHEMA["properties"]))


def scratch_root(root: Path) -> Path:
    """A root holding what a careless value could hit: a folder of someone's files, a link to it, a
    loop of links, a file, and the runs' own $HOME and $TMPDIR."""
    scratch = root / "s"
    (scratch / "mine").mkdir(parents=True)
    (scratch / "mine" / "thesis.tex").write_text("years of work\n")
    (scratch / "link").symlink_to(scratch / "mine")
    (scratch / "loop").symlink_to(scratch / "loop")
    (scratch / "file.txt").write_text("")
    (root / "home").mkdir()
    (root / "home" / ".bashrc").write_text("")
    (root / "tmp").mkdir()
    return scratch


def hostile_path(rng: random.Random, scratch: Path) -> str:
    """Segments of `..`, spaces, quotes, unicode, shell and glob characters, braces, control characters
    and over-long names below the scratch folder; never resolving above it."""
    while True:
        text = str(scratch / "out" / "in") + "/" + "/".join(rng.choice(SEGMENTS) for _ in range(rng.randint(1, 3)))
        if "\x00" in text or Path(os.path.normpath(text)).is_relative_to(scratch):
            return text


def special_paths(scratch: Path, home: Path) -> list[Any]:
    """Places a run must never write: the root, $HOME, system folders, others' files (also through
    a link), a file, a loop, above the checkout."""
    return ["/", str(home), f"{home}/.", "/etc/tcprepro", "/proc/self", "/usr/local/x", "..", "../..",
            str(scratch / "mine"), str(scratch / "link"), str(scratch / "link") + "/..", str(scratch / "loop"),
            str(scratch / "file.txt"), str(scratch / "out" / ".." / ".." / ".." / ".."), "", None, 7, ["a"]]


def edges(rng: random.Random, field: dict[str, Any]) -> list[Any]:
    """A field's bounds, just beyond them, and two values between (integers where it takes them)."""
    low = field.get("minimum", field.get("exclusiveMinimum", 0))
    high = field.get("maximum", 2 ** 40)
    if field["type"] == "integer":
        return [low, high, low - 1, high + 1, rng.randint(low, high), rng.randint(low, high)]
    return [low, high, high * (1 + 1e-9), -low - 1e-9, rng.uniform(low, high), rng.uniform(low, high)]


def cases(scratch: Path, home: Path) -> list[Case]:
    rng = random.Random("workflow-keys")
    out = [Case(key, v) for key, field in NUMERIC.items() for v in [*rng.sample(NUMBERS, 8), *edges(rng, field)]]
    out += [Case((kind,), v) for kind in PATHS for v in
            [*special_paths(scratch, home), *(hostile_path(rng, scratch) for _ in range(24))]]
    out += [Case((key,), v) for key in WORDS for v in rng.sample(WORD_VALUES, 8)]
    return out


# The UML kernel's build root: `make test` builds the kernel there beside the unit tests
# (scripts/uml-kernel-early), which no config check or dry run does.
BUILDING = CHECKOUT / "build" / "uml"


def listing(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under `root` (links not followed, caches and the kernel's build left out) with its
    mode, size and mtime."""
    seen: dict[str, tuple[int, int, int]] = {}
    for top, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in CACHES and Path(top, d) != BUILDING]
        for name in [*dirs, *files]:
            st = os.lstat(os.path.join(top, name))
            seen[os.path.join(top, name)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return seen


def changed(before: dict, after: dict) -> set[Path]:
    return {Path(p) for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def sane(key: tuple[str, ...], value: Any) -> bool:
    """An accepted number is what its field means: finite, of its type (3.0 is no integer), in bounds."""
    field = NUMERIC[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return False
    if field["type"] == "integer" and not isinstance(value, int):
        return False
    return (value >= field.get("minimum", -math.inf) and value <= field.get("maximum", math.inf)
            and value > field.get("exclusiveMinimum", -math.inf))


def allowed_folder(value: str, scratch: Path) -> Path | None:
    """Where an accepted path value lets a run write: below the scratch folder, none of its hazards."""
    path = (CHECKOUT / value).resolve()
    hazards = [scratch / n for n in ("mine", "file.txt")]
    ok = path.is_relative_to(scratch) and path != scratch and not any(path.is_relative_to(h) for h in hazards)
    return path if ok and not re.search(r"[\x00-\x1f{}]", value) else None


def check_config(files: list[Path], env: dict[str, str]) -> dict[Path, str]:
    """`tcprepro check-config` on every file at once: its one line per file ('ok: ...' or 'error: ...')."""
    proc = subprocess.run([sys.executable, "-m", "tcprepro", "check-config", *map(str, files)], cwd=CHECKOUT,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines() + proc.stderr.splitlines()
    said = {f: [line for line in lines if line.startswith((f"ok: {f}", f"error: {f}"))] for f in files}
    for f, mine in said.items():
        assert len(mine) == 1, (f, mine)
    assert len(lines) == len(files), "a message of more than one line"
    return {f: mine[0] for f, mine in said.items()}


def snakemake(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SNAKEMAKE, "-n", "--cores", "1", *args], cwd=CHECKOUT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def assert_refused_in_one_line(proc: subprocess.CompletedProcess[str], name: str) -> None:
    """Snakemake's frame around the workflow's error: 'WorkflowError in file ...', then the one line."""
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Traceback" not in out, out[-3000:]
    lines = out.splitlines()
    errors = [i for i, line in enumerate(lines) if re.match(r"\w+(Error|Exception)\b", line)]
    assert len(errors) == 1 and lines[errors[0]].startswith("WorkflowError"), out[-3000:]
    assert f"'{name}'" in lines[errors[0] + 1] or f"{name}=" in lines[errors[0] + 1], out[-3000:]


def assert_planned(proc: subprocess.CompletedProcess[str], config: dict[str, Any]) -> None:
    """Accepted: the dry run plans the trial and the figures inside the folders given."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Traceback" not in out, out[-3000:]
    assert f"output: {Path(config['results']) / 'smoke' / 'wlan'}/" in out, out[-3000:]
    assert f"output: {Path(config['figures']) / 'wlan' / 'smoke'}" in out, out[-3000:]


def argv_text(value: Any) -> str | None:
    """The --config text Snakemake parses back into `value` (its int, float, bool, YAML, str), or None."""
    if isinstance(value, str):
        return None if NOT_ARGV.search(value) else value
    return None if value is None or isinstance(value, list | dict) else str(value)     # 'nan', '1e+308', 'True'


def argv_outcome(case: Case, text: str, accepted: bool) -> bool | None:
    """What the workflow should make of `--config KEY=text`: check-config's verdict when Snakemake's
    own parser gives back the case's value, a refusal when it changed a text (check_config_args), and
    None when it made another value of it ('３' is 3 to int())."""
    got = parse_config([f"{case.name}={text}"])[case.name]
    nan = isinstance(got, float) and isinstance(case.value, float) and math.isnan(got) and math.isnan(case.value)
    if nan or (type(got) is type(case.value) and got == case.value):
        return accepted
    return False if isinstance(got, str) else None


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    scratch = scratch_root(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TCPREPRO_")}
    env.update(HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path / "tmp"),
               XDG_CACHE_HOME=str(tmp_path / "cfg" / "cache"))    # Snakemake's own source cache, not a run's
    return scratch, env


def test_every_key_of_the_schema_is_fed() -> None:
    """A key added to the schema is added here, as a number, a path or a word."""
    assert {k[0] for k in NUMERIC} | set(PATHS) | set(WORDS) == set(SCHEMA["properties"])
    assert len(NUMERIC) >= 8


def test_hostile_values_are_refused_in_one_line_or_planned_where_they_say(
        world: tuple[Path, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scratch, env = world
    all_cases = cases(scratch, tmp_path / "home")
    files = {case: write_config(tmp_path / "cfg" / f"case-{i}.yaml", case.config(scratch))
             for i, case in enumerate(all_cases)}
    watched = [scratch, tmp_path / "home", tmp_path / "tmp", CHECKOUT]
    before = [listing(w) for w in watched]

    said = check_config(list(files.values()), env)
    accepted = {case: said[f].startswith("ok: ") for case, f in files.items()}
    for case, ok in accepted.items():
        assert ok or f"field '{case.name}'" in said[files[case]], (case, said[files[case]])
        if ok and case.key in NUMERIC:
            assert sane(case.key, case.value), case
        if ok and case.key[0] in PATHS:
            assert allowed_folder(case.value, scratch), case
        if ok and case.key == ("max_attempts",):        # as the Snakefile hands it to each trial
            monkeypatch.setenv("TCPREPRO_MAX_ATTEMPTS", str(case.value))
            assert max_attempts(None) == case.value
    assert sum(accepted.values()) >= 20 and sum(not ok for ok in accepted.values()) >= 100

    assert dry_runs(random.Random("workflow-keys-runs"), files, accepted, scratch, env, tmp_path / "cfg") == 8
    writes = set().union(*(changed(b, listing(w)) for b, w in zip(before, watched, strict=True)))
    assert not writes, sorted(writes)[:10]        # check-config and dry runs write nothing at all


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(config, allow_unicode=True))
    return path


def dry_runs(rng: random.Random, files: dict[Case, Path], accepted: dict[Case, bool], scratch: Path,
             env: dict[str, str], cfg: Path) -> int:
    """A few dry runs (seconds each): values through --config (refused and accepted numbers and
    paths; what Snakemake's parser changes is refused), through --configfile (agreeing with
    check-config) and through a profile's config:."""
    argv = {c: t for c in files if c.key[0] != "cluster" and (t := argv_text(c.value)) is not None}
    expect = {c: argv_outcome(c, t, accepted[c]) for c, t in argv.items()}
    refused = [c for c in argv if expect[c] is False and c.key[0] in (*PATHS, "max_attempts", "vm_lanes")]
    planned = [c for c in argv if expect[c] and c.key[0] in PATHS]
    runs = [(c, ["--config", *config_args(c, argv[c], scratch)]) for c in [*rng.sample(refused, 3),
                                                                           *rng.sample(planned, 2)]]
    cluster = [c for c in files if c.key[0] == "cluster" and accepted[c]]       # the trials' resources
    control = [c for c in files if isinstance(c.value, str) and re.search(r"[\x00-\x1f]", c.value)]
    runs += [(c, ["--configfile", str(files[c])]) for c in [rng.choice(cluster), rng.choice(control)]]
    hostile = rng.choice([c for c in refused if c.key[0] in PATHS])
    profile = cfg / "profile"
    write_config(profile / "config.yaml", {"config": config_args(hostile, argv[hostile], scratch)})
    runs.append((hostile, ["--workflow-profile", str(profile)]))
    for case, args in runs:
        proc = snakemake(args, env)
        ok = expect.get(case, accepted[case]) if args[0] != "--configfile" else accepted[case]
        try:
            assert_planned(proc, case.config(scratch)) if ok else assert_refused_in_one_line(proc, case.name)
        except AssertionError as exc:
            raise AssertionError(f"{args}: {exc}") from None
    return len(runs)


def config_args(case: Case, text: str, scratch: Path) -> list[str]:
    """The case's config as --config KEY=VALUE words, its own value as `text`."""
    config = case.config(scratch)
    return [*(f"{k}={v}" for k, v in config.items() if k not in ("papers", case.name)), "papers=[wlan]",
            f"{case.name}={text}"]
