"""Remove what killed trials left behind: tracefs instances, congestion controls they loaded
(BPF struct_ops registrations, modules) and half-written trial directories.

Processes and namespaces need no sweep: every process a trial starts dies with its runner
(parent-death signal), and a namespace disappears with its last process.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from cc import loader
from tcprepro import CHECKOUT
from testbed.tracing import sweep_stale_instances

OWNER_FILE = ".owner"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_partials(results: Path) -> list[Path]:
    """`.partial` trial directories whose writer is gone."""
    out = []
    for d in results.glob("*/*/*/*.partial"):
        owner = d / OWNER_FILE
        try:
            pid = int(owner.read_text())
        except (OSError, ValueError):
            pid = 0
        if not pid or not pid_alive(pid):
            out.append(d)
    return out


def sweep(results: Path | None = None, quiet: bool = False) -> list[str]:
    removed = [f"tracefs instance {name}" for name in sweep_stale_instances()]
    removed += loader.sweep()
    for d in stale_partials(results or CHECKOUT / "results"):
        shutil.rmtree(d, ignore_errors=True)
        removed.append(f"partial trial {d}")
    if not quiet:
        print("\n".join(removed) if removed else "nothing to clean")
    return removed
