"""`tcprepro --help` and every subcommand's --help describe each argument (and list its choices);
`tcprepro --version` names the version and the commit."""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tcprepro import version
from tcprepro.cli import COMMANDS, build_parser, main

REPO = Path(__file__).resolve().parents[2]


def subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_argument_of_every_command_is_described(name: str) -> None:
    parser = subparsers()[name]
    assert parser.description
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"tcprepro {name}: {'/'.join(action.option_strings) or action.dest} has no help"


def test_the_console_script_is_installed_with_the_project() -> None:
    exe = shutil.which("tcprepro") or str(Path(__import__("sys").executable).with_name("tcprepro"))
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("usage: tcprepro")
    assert all(name in out.stdout for name in COMMANDS)



def test_version_is_pyproject_s_with_the_checkout_s_commit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    got = re.fullmatch(r"tcprepro (\S+)(?: \(git ([0-9a-f]{12})(, modified)?\))?\n", out)
    assert got, out
    assert got[1] == tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    if (REPO / ".git").exists():
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert got[2] and head.stdout.startswith(got[2])


def test_version_outside_git_is_the_version_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "tcprepro"\nversion = "9.8.7"\n')
    monkeypatch.setattr(version, "CHECKOUT", tmp_path)
    assert version.describe() == "tcprepro 9.8.7"


def test_equivalence_refuses_a_measured_paper_and_a_missing_results_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only simulated trials record model sources; a check of no trials names `make restore`."""
    assert main(["equivalence", "collateral"]) == 2
    assert "measured paper" in capsys.readouterr().err
    assert main(["equivalence", "wlan", "--results", str(tmp_path / "none")]) == 2
    assert "make restore" in capsys.readouterr().err
    assert main(["equivalence", "nopaper"]) == 2
    assert "nopaper" in capsys.readouterr().err
