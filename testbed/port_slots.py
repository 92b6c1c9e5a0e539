"""Port slots: exclusive slots that let real-time trials run side by side on one kernel.

A trial holds one slot for its lifetime. The slot gives it a private TCP/UDP port block (so the
global tcp:tcp_probe tracepoint can be filtered to this trial's flows) and a tag for its tracefs
instance. The lock is an flock: the kernel releases it when the holder dies, even by SIGKILL.

A slot is not a lane (testbed/lane/: where a trial runs). Its lock files and tag keep their old
names (`lanes/lane-<i>.lock`, `lane<i>`): trials of a checkout from before the rename, running on
the same kernel at the same time, must see the same locks.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from configuration import environment
from configuration.load import PORT_BLOCK

SLOT_DIR = Path(environment.get("TCPREPRO_RUN_DIR", "/run/tcprepro") or "/run/tcprepro") / "lanes"
MAX_SLOTS = 64
PORT_BASE = 20000


@dataclass(frozen=True)
class PortSlot:
    index: int
    port_base: int

    @property
    def port_range(self) -> tuple[int, int]:
        return self.port_base, self.port_base + PORT_BLOCK - 1

    @property
    def tag(self) -> str:
        return f"lane{self.index}"


class NoFreeSlot(RuntimeError):
    pass


def try_slot(lock_dir: Path, prefix: str, count: int) -> tuple[int, int] | None:
    """(index, fd) of the first free of `count` flock slots `<prefix>-<i>.lock`, held until the fd
    is closed (by the kernel if the holder dies); None when all are taken."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        fd = os.open(lock_dir / f"{prefix}-{index}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return index, fd
    return None


@contextmanager
def acquire() -> Iterator[PortSlot]:
    """Take the first free port slot; hold it until the block exits."""
    slot = try_slot(SLOT_DIR, "lane", MAX_SLOTS)
    if slot is None:
        raise NoFreeSlot(f"all {MAX_SLOTS} port slots in {SLOT_DIR} are busy: too many concurrent trials "
                         f"on this kernel; run with fewer --cores")
    index, fd = slot
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield PortSlot(index, PORT_BASE + PORT_BLOCK * index)
    finally:
        os.close(fd)
