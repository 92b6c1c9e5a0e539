"""A process recorded in a file, found again and killed with its whole group.

A pid alone names no process for long: pids are reused, and a reboot starts them over. So a record
pairs the pid with the process's start time and the host's boot id, and only a process that still
matches all three is taken for the recorded one. A VM runs as a process group (vng, QEMU, cat), and
killing it means killing every member.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in ticks) of a process, or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[1].split()
    return fields[0], int(fields[19])


def group_members(pgid: int) -> list[int]:
    """The live (neither zombie nor dead) processes of a process group."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in "ZX":
            members.append(int(entry.name))
    return members


def kill_group(pgid: int, wait: float = 5.0) -> None:
    """SIGTERM the whole vng/qemu process group, then SIGKILL whatever is left."""
    for sig, pause in ((signal.SIGTERM, wait), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + pause
        while time.monotonic() < deadline:
            reap_children()
            if not group_members(pgid):
                return
            time.sleep(0.1)


_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def track_child(proc: subprocess.Popen[bytes]) -> None:
    """Have reap_children collect `proc` once it exits."""
    _CHILDREN[proc.pid] = proc


def reap_children() -> None:
    """Collect VMs this process launched that have exited, so they do not linger as zombies."""
    for pid, proc in list(_CHILDREN.items()):
        if proc.poll() is not None:
            del _CHILDREN[pid]


def host_boot_id() -> str:
    """This boot of the host, by the kernel's random id; "" where /proc does not tell."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""
