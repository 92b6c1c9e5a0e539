"""The VM's measurement slots: more trials than slots wait their turn; a slot frees with its holder."""
from __future__ import annotations

import threading
import time
from itertools import pairwise
from pathlib import Path

from testbed.lane.vm import vm_slot


def test_one_slot_admits_one_measurement_at_a_time(tmp_path: Path) -> None:
    spans: list[tuple[float, float]] = []

    def measure() -> None:
        with vm_slot(1, tmp_path):
            start = time.monotonic()
            time.sleep(0.3)
            spans.append((start, time.monotonic()))

    threads = [threading.Thread(target=measure) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    spans.sort()
    assert len(spans) == 3
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in pairwise(spans))


def test_two_slots_overlap(tmp_path: Path) -> None:
    with vm_slot(2, tmp_path) as first, vm_slot(2, tmp_path) as second:
        assert {first, second} == {0, 1}
    with vm_slot(1, tmp_path) as again:             # released on exit
        assert again == 0


def test_a_slot_whose_guest_job_still_measures_is_not_taken(tmp_path: Path) -> None:
    """The flock of a SIGKILLed holder is free at once; its guest job may measure on: wait for it."""
    guest_done = time.monotonic() + 1.0
    started = time.monotonic()
    with vm_slot(1, tmp_path, busy=lambda index: index == 0 and time.monotonic() < guest_done) as index:
        assert index == 0 and time.monotonic() >= guest_done > started
