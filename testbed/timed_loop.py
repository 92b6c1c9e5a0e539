"""What the timed loop of a measurement process (sampler, VoIP sender/receiver) shares.

StopFlag: SIGTERM/SIGINT end the loop at its next boundary, so output files are always complete.
realtime(): real-time scheduling for the loop, and only for the loop.

SCHED_FIFO keeps a 10 ms sampling grid or a 20 ms VoIP grid on time when trials or VMs load every
CPU. Held past the loop it does harm: a FIFO process tearing down its interpreter starves
ksoftirqd, where the emulated link's qdisc work runs (seen under QEMU TCG: the bottleneck drained
at 741 kbit/s of 1000 while the VoIP sender exited).
"""
from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def realtime(priority: int) -> Iterator[str]:
    """SCHED_FIFO at `priority` inside the block (0 = normal scheduling); yields the policy used."""
    if priority <= 0:
        yield "SCHED_OTHER"
        return
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError as e:
        yield f"SCHED_OTHER (SCHED_FIFO refused: {e.strerror})"
        return
    try:
        yield f"SCHED_FIFO {priority} during the timed loop"
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


class StopFlag:
    """Set by SIGTERM or SIGINT; the loop checks it and finishes cleanly."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True
