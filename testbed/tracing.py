"""Per-trial tcp:tcp_probe capture in a private tracefs instance.

Each trial gets its own instance (its own ring buffer, clock and event filter), so trials that run
concurrently on one kernel never share or clear each other's buffers: the instance filters on the
trial's destination-port block, and `trace_clock=mono` makes every timestamp CLOCK_MONOTONIC
seconds, the clock of `time.monotonic()` and of the other files of a trial directory.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

log = logging.getLogger(__name__)

TRACEFS = Path("/sys/kernel/tracing")
EVENT = "tcp/tcp_probe"
INSTANCE_PREFIX = "tcprepro-"
_INSTANCE_RX = re.compile(rf"{INSTANCE_PREFIX}(\d+)-(.+)")
_TAG_RX = re.compile(r"[A-Za-z0-9_.+-]{1,64}")
_READ_CHUNK = 1 << 16
_POLL_S = 0.05  # the reader drains every 50 ms: 8 MiB per CPU holds minutes of events at 5k/s


class TracingError(RuntimeError):
    """tracefs cannot give this trial what it needs; the message names the fix."""


@dataclass(frozen=True)
class ProbeResult:
    """What one capture wrote and what the kernel said it lost (overruns + dropped events)."""

    events: int
    lost_events: int
    bytes: int
    seconds: float

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


def ensure_tracefs(root: Path = TRACEFS) -> None:
    """Mount tracefs at `root` if it is not there yet (a fresh VM or container often lacks it)."""
    if (root / "instances").is_dir():
        return
    if "tracefs" not in Path("/proc/filesystems").read_text():
        raise TracingError("this kernel has no tracefs: it needs CONFIG_FTRACE / CONFIG_TRACING")
    proc = subprocess.run(
        ["mount", "-t", "tracefs", "nodev", str(root)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0 or not (root / "instances").is_dir():
        raise TracingError(
            f"tracefs is not mounted at {root} and mounting it failed ({proc.stderr.strip()}); "
            f"fix: as root, `mount -t tracefs nodev {root}`"
        )


def check_tracepoint(event: str = EVENT, root: Path = TRACEFS) -> None:
    """Fail early, naming the missing feature, when the kernel lacks a tracepoint."""
    if not (root / "events" / event / "enable").exists():
        raise TracingError(
            f"the kernel has no tracepoint {event.replace('/', ':')} ({root}/events/{event} is absent): "
            "tcp_probe needs Linux >= 4.16 built with CONFIG_TRACEPOINTS; run in the pinned-kernel VM"
        )


def _write(path: Path, text: str) -> None:
    """Write one tracefs control file, turning the kernel's refusal into a TracingError."""
    try:
        path.write_text(text + "\n")
    except OSError as e:
        raise TracingError(f"cannot write {text!r} to {path}: {e.strerror}") from e


class _PipeReader(threading.Thread):
    """Copies trace_pipe to a file until stopped, then drains what the buffer still holds.

    trace_pipe is opened non-blocking: a read of an empty buffer returns EAGAIN instead of
    sleeping in the kernel, so stopping never needs a signal and the final drain is exact.
    """

    def __init__(self, pipe: Path, out: BinaryIO) -> None:
        super().__init__(name=f"trace-pipe-{pipe.parent.name}", daemon=True)
        self._fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
        self._out = out
        self._stop_evt = threading.Event()
        self.lines = 0
        self.bytes = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self._stop_evt.wait(_POLL_S):
                self._drain()
                self._out.flush()
            self._drain()
        except BaseException as e:  # reported by ProbeTrace.__exit__
            self.error = e
        finally:
            os.close(self._fd)

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, _READ_CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                return
            self._out.write(chunk)
            self.lines += chunk.count(b"\n") - chunk.count(b"[LOST ")
            self.bytes += len(chunk)

    def stop(self) -> None:
        self._stop_evt.set()
        self.join()


class ProbeTrace:
    """Context manager: tcp:tcp_probe events whose dport is in [port_lo, port_hi] stream to out_path.

    The instance is named `tcprepro-<pid>-<tag>` so `sweep_stale_instances` can tell a dead
    owner's leftovers from a live trial's. After exit, `result` holds the counts.
    """

    def __init__(
        self, out_path: Path, port_lo: int, port_hi: int, tag: str, buffer_kb: int = 8192,
        root: Path = TRACEFS,
    ) -> None:
        if not 0 < port_lo <= port_hi <= 65535:
            raise ValueError(f"bad port block [{port_lo}, {port_hi}]")
        if not _TAG_RX.fullmatch(tag):
            raise ValueError(f"bad tag {tag!r}: use 1-64 of [A-Za-z0-9_.+-]")
        self.out_path = Path(out_path)
        self.port_lo, self.port_hi = port_lo, port_hi
        self.buffer_kb = buffer_kb
        self.root = root
        self.instance = root / "instances" / f"{INSTANCE_PREFIX}{os.getpid()}-{tag}"
        self.result: ProbeResult | None = None
        self._reader: _PipeReader | None = None
        self._out: BinaryIO | None = None
        self._t0 = 0.0

    def __enter__(self) -> ProbeTrace:
        ensure_tracefs(self.root)
        check_tracepoint(EVENT, self.root)
        try:
            self.instance.mkdir()
        except FileExistsError as e:
            raise TracingError(f"{self.instance} exists: tag reused within this process?") from e
        try:
            self._configure()
            self._start()
        except BaseException:
            self._teardown()
            raise
        return self

    def _configure(self) -> None:
        _write(self.instance / "trace_clock", "mono")
        _write(self.instance / "buffer_size_kb", str(self.buffer_kb))
        ev = self.instance / "events" / EVENT
        _write(ev / "filter", f"dport >= {self.port_lo} && dport <= {self.port_hi}")

    def _start(self) -> None:
        self.out_path.parent.mkdir(parents=True, exist_ok=True)
        self._out = self.out_path.open("wb")
        self._reader = _PipeReader(self.instance / "trace_pipe", self._out)
        self._reader.start()
        self._t0 = time.monotonic()
        _write(self.instance / "events" / EVENT / "enable", "1")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        error = self._teardown()
        if error is None:
            return
        if exc is not None:  # the body's exception wins; do not hide the reader's
            log.error("tcp_probe reader of %s failed: %s", self.instance.name, error)
            return
        raise TracingError(f"tcp_probe reader of {self.instance.name} failed: {error}") from error

    def _teardown(self) -> BaseException | None:
        """Disable, drain, count, remove: each step runs even if an earlier one failed."""
        enable = self.instance / "events" / EVENT / "enable"
        with contextlib.suppress(OSError):
            enable.write_text("0\n")  # returns after the tracepoint is unhooked: no event is in flight
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.stop()
            lost = _lost_events(self.instance)
            self.result = ProbeResult(reader.lines, lost, reader.bytes, time.monotonic() - self._t0)
            if lost:
                log.warning("%s: the kernel lost %d tcp_probe events (buffer overrun)", self.instance.name, lost)
        if self._out is not None:
            self._out.close()
            self._out = None
        _rmdir_instance(self.instance)
        return reader.error if reader is not None else None


def _lost_events(instance: Path) -> int:
    """Sum of per-CPU overruns and dropped events: what the ring buffer could not keep."""
    total = 0
    for stats in (instance / "per_cpu").glob("cpu*/stats"):
        for line in stats.read_text().splitlines():
            key, _, val = line.partition(":")
            if key.strip() in ("overrun", "dropped events"):
                total += int(val)
    return total


def _rmdir_instance(instance: Path, tries: int = 20) -> None:
    """rmdir with a short retry: EBUSY lasts while any file of the instance is still open."""
    for _ in range(tries):
        try:
            instance.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise
            time.sleep(0.05)
    raise TracingError(f"cannot remove {instance}: still busy (a reader holds one of its files)")


# --------------------------------------------------------------------------------------------
# Leftovers of killed processes
# --------------------------------------------------------------------------------------------


def sweep_stale_instances(root: Path = TRACEFS) -> list[str]:
    """Remove `tcprepro-<pid>-*` instances whose owner is gone; returns the names removed.

    A leftover reader (e.g. a `cat trace_pipe` orphaned by a kill -9) keeps the instance busy:
    it is killed first. An instance busy for a reader we cannot see (another pid namespace) is
    left alone with a warning.
    """
    instances = root / "instances"
    if not instances.is_dir():
        return []
    removed = []
    for inst in sorted(instances.iterdir()):
        m = _INSTANCE_RX.fullmatch(inst.name)
        if m is None or _owner_alive(int(m[1]), inst):
            continue
        if _remove_stale(inst):
            removed.append(inst.name)
    return removed


def _owner_alive(pid: int, inst: Path) -> bool:
    """The owner lives if its pid runs a process older than the instance, or holds its files.

    The age check catches pid reuse; the holder check (via NSpid) keeps an instance whose owner
    runs in another pid namespace, e.g. a container sharing this kernel.
    """
    started = _proc_start_boottime(pid)
    if started is not None and started <= _instance_birth_boottime(inst) + 1.0:
        return True
    return any(pid in _nspids(h) for h in _holders(inst))


def _proc_start_boottime(pid: int) -> float | None:
    """Start of `pid` in CLOCK_BOOTTIME seconds (None if no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None  # a zombie holds no files and runs no trial
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _instance_birth_boottime(inst: Path) -> float:
    """The instance's creation time (tracefs stamps it in CLOCK_REALTIME), in CLOCK_BOOTTIME."""
    st = inst.stat()
    real_minus_boot = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return min(st.st_ctime, st.st_mtime) - real_minus_boot


def _holders(inst: Path) -> list[int]:
    """Pids (in our pid namespace) with a file of `inst` open."""
    prefix = f"{inst}/"
    pids = []
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        with contextlib.suppress(OSError):
            if any(os.readlink(fd).startswith(prefix) for fd in fd_dir.iterdir()):
                pids.append(int(fd_dir.parent.name))
    return pids


def _nspids(pid: int) -> list[int]:
    """The pid of `pid` in each pid namespace it belongs to (outermost first)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
    return [pid]


def _remove_stale(inst: Path) -> bool:
    """Disable the instance's events, kill leftover readers, remove it; False if it stays busy."""
    with contextlib.suppress(OSError):
        (inst / "events" / "enable").write_text("0\n")
    for pid in _holders(inst):
        log.warning("killing pid %d: leftover reader of stale tracefs instance %s", pid, inst.name)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        _rmdir_instance(inst, tries=40)
    except TracingError as e:
        log.warning("%s", e)
        return False
    return True
