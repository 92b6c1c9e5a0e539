"""The host side of one guest job, as its caller sees it: the job's output copied to the caller's
own stdout and stderr as it grows, its exit status read, and the caller's SIGINT or SIGTERM turned
into a cancel request in the spool, so the job is cancelled rather than left running after its
caller died."""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO


class Cancelled(Exception):
    """The caller was signalled while it waited for a VM or for its job to start."""


class CancelFlag:
    """Turns SIGINT/SIGTERM into a flag the wait loops check, so the guest job gets cancelled
    rather than the caller dying with the job still running."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int = signal.SIGTERM
        self.count = 0

    def _handle(self, signum: int, _frame: object) -> None:
        self.signum, self.count = signum, self.count + 1
        self.event.set()

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        old = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)


class Tail:
    """Copies what a growing file gains to a stream (binary when it has a buffer)."""

    def __init__(self, path: Path, stream: IO[str]) -> None:
        self.path, self.stream, self.pos = path, stream, 0

    def pump(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.pos)
                data = fh.read()
        except OSError:
            return
        if not data:
            return
        self.pos += len(data)
        buf = getattr(self.stream, "buffer", None)
        if buf is not None:
            self.stream.flush()
            buf.write(data)
            buf.flush()
        else:
            self.stream.write(data.decode(errors="replace"))
            self.stream.flush()


def request_cancel(job_dir: Path) -> None:
    """Ask the guest agent to cancel the job: it looks for `<job>.cancel` beside the job's folder."""
    with contextlib.suppress(OSError):
        job_dir.with_name(f"{job_dir.name}.cancel").touch()


def read_int(path: Path) -> int | None:
    """The number a file holds (a job's exit status); None while it is absent or incomplete."""
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None
