"""`tcprepro --help` and every subcommand's --help describe each argument (and list its choices)."""
from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path

import pytest

from tcprepro.cli import COMMANDS, build_parser


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
