"""The workflow keys a Snakemake profile of ours sets, checked against the run's config.

A profile (profiles/<name>/config.yaml) sets its keys through a config file of its own
(`configfile: workflow.yaml`), so that `--config` on the command line adds to them. A `--configfile`
on the command line replaces the profile's, though, and the run would silently take
config/workflow.yaml's defaults (the quick profile under `--workflow-profile profiles/full`): this
names such a run's lost setting and the fix, before anything runs.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from configuration import yaml_input


def named_profile(argv: Sequence[str], cwd: Path, snakefile_dir: Path) -> Path | None:
    """The folder of the profile `--workflow-profile` names in `argv`, found where Snakemake looks
    (the path itself, profiles/<name> of the working folder, of the Snakefile's folder); None if none."""
    value = None
    for i, arg in enumerate(argv):
        if arg == "--workflow-profile" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--workflow-profile="):
            value = arg.split("=", 1)[1]
    if not value or value == "none":
        return None
    for candidate in (cwd / value, cwd / "profiles" / value, snakefile_dir / "profiles" / value):
        if (candidate / "config.yaml").is_file():
            return candidate
    return None


def lost_setting(profile: Path, config: Mapping[str, Any]) -> str | None:
    """One line naming the first key the profile's own config file sets to another value than the
    run has, with the fix; None when the run holds all of them."""
    settings = _read(profile / "config.yaml")
    files = settings.get("configfile") or []
    for name in [files] if isinstance(files, str) else files:
        path = profile / name
        for key, value in _read(path).items():
            if config.get(key) != value:
                return (f"the workflow profile {profile} sets {key}={value} ({path}), but this run has "
                        f"{key}={config.get(key)}: a --configfile on the command line replaces the profile's, "
                        f"or --config contradicts it; fix: add --config {key}={value}, or give --configfile "
                        f"{path} too")
    return None


def _read(path: Path) -> dict[str, Any]:
    data = yaml_input.parse(yaml_input.read_bytes(path), path)
    return data if isinstance(data, dict) else {}
