"""Lanes: exclusive slots that let trials run side by side on one kernel.

A trial holds one lane for its lifetime. The lane gives it a private TCP/UDP port block (so the
global tcp:tcp_probe tracepoint can be filtered to this trial's flows) and a tag for its tracefs
instance. The lock is an flock: the kernel releases it when the holder dies, even by SIGKILL.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

LANE_DIR = Path(os.environ.get("TCPREPRO_RUN_DIR", "/run/tcprepro")) / "lanes"
MAX_LANES = 64
PORT_BASE = 20000
PORT_BLOCK = 100


@dataclass(frozen=True)
class Lane:
    index: int
    port_base: int

    @property
    def port_range(self) -> tuple[int, int]:
        return self.port_base, self.port_base + PORT_BLOCK - 1

    @property
    def tag(self) -> str:
        return f"lane{self.index}"


class NoFreeLane(RuntimeError):
    pass


@contextmanager
def acquire() -> Iterator[Lane]:
    """Take the first free lane; hold it until the block exits."""
    LANE_DIR.mkdir(parents=True, exist_ok=True)
    for index in range(MAX_LANES):
        fd = os.open(LANE_DIR / f"lane-{index}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield Lane(index, PORT_BASE + PORT_BLOCK * index)
        finally:
            os.close(fd)
        return
    raise NoFreeLane(f"all {MAX_LANES} lanes in {LANE_DIR} are busy: too many concurrent trials "
                     f"on this kernel; run with fewer --cores")
