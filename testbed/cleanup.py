"""Remove what killed trials left behind: tracefs instances, congestion controls they loaded
(BPF struct_ops registrations, modules) and half-written trial directories.

Processes and namespaces need no sweep: every process a trial starts dies with its runner
(parent-death signal), and a namespace disappears with its last process.
"""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from cc import loader
from configuration import CHECKOUT
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


def _start_ticks(pid: int) -> int | None:
    """When a process started (clock ticks after boot, /proc/PID/stat field 22); None if gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def machine_id() -> str:
    """This machine (host name and boot): a pid means something only on the machine that wrote it.
    On a cluster, results/ is shared by nodes whose processes this one cannot see."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "unknown-boot"
    return f"{socket.gethostname()}/{boot}"


def claim(folder: Path) -> None:
    """Mark `folder` as being written by this process: its pid, start time and machine, so that a
    sweep never takes a folder whose writer lives, nor spares one because its pid was reused."""
    (folder / OWNER_FILE).write_text(f"{os.getpid()} {_start_ticks(os.getpid())} {machine_id()}")


def owner_alive(folder: Path) -> bool | None:
    """Whether the process that claimed `folder` still runs; None when that cannot be known here:
    never claimed (being created right now, or not a folder of ours), or claimed on another machine
    (a cluster node: a job its scheduler killed is redone by the trial's next run, which starts from
    an empty folder). Such a folder is left alone."""
    try:
        fields = (folder / OWNER_FILE).read_text().split()
        pid = int(fields[0])
    except (OSError, ValueError, IndexError):
        return None
    if len(fields) > 2 and fields[2] != machine_id():
        return None
    started = fields[1] if len(fields) > 1 else None
    if not pid_alive(pid):
        return False
    return started is None or started == "None" or str(_start_ticks(pid)) == started


def stale_partials(results: Path) -> list[Path]:
    """`.partial` trial directories whose writer is gone."""
    return [d for d in results.glob("*/*/*/*.partial") if owner_alive(d) is False]


def sweep(results: Path | None = None, quiet: bool = False, kernel_state: bool = True) -> list[str]:
    """Stale partial trials; with `kernel_state`, also what killed trials left in this kernel."""
    removed = []
    if kernel_state:
        removed += [f"tracefs instance {name}" for name in sweep_stale_instances()]
        removed += loader.sweep()
    for d in stale_partials(results or CHECKOUT / "results"):
        shutil.rmtree(d, ignore_errors=True)
        removed.append(f"partial trial {d}")
    if not quiet:
        print("\n".join(removed) if removed else "nothing to clean")
    return removed
