"""Run inside a UML guest by tests/integration/test_uml_clock.py: reads the guest's clocks through
the C library (which takes the vDSO) and by the raw system call, and writes what it saw as JSON.

    python3 guest_clock_probe.py <out.json>

- `same`: pairs of (library read, system-call read) made back to back for CLOCK_REALTIME,
  CLOCK_MONOTONIC, CLOCK_BOOTTIME, gettimeofday() and time(): under time travel the clock stands
  still while a process runs, so each pair must be equal, whichever way each read is made.
- `spins`: a task that reads the clock N times in a row without giving up the CPU (the loops the
  kernel charges virtual time for, kernel/uml/patches/0007): the virtual nanoseconds between its
  first and last read, made all through the library, all by system call, and half and half.
"""
from __future__ import annotations

import ctypes
import json
import sys
import time

SYS_GETTIMEOFDAY, SYS_TIME, SYS_CLOCK_GETTIME = 96, 201, 228      # x86_64
CLOCKS = {"realtime": 0, "monotonic": 1, "boottime": 7}
READS_IN_A_ROW = 150_000                 # past the 100 000 free reads of patch 0007

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.time.restype = ctypes.c_long


class Timespec(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]


class Timeval(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("usec", ctypes.c_long)]


ts, tv = Timespec(), Timeval()
ts_ref, tv_ref = ctypes.byref(ts), ctypes.byref(tv)


def lib_clock(clock: int) -> int:
    assert libc.clock_gettime(clock, ts_ref) == 0
    return ts.sec * 10**9 + ts.nsec


def sys_clock(clock: int) -> int:
    assert libc.syscall(SYS_CLOCK_GETTIME, clock, ts_ref) == 0
    return ts.sec * 10**9 + ts.nsec


def lib_gettimeofday() -> int:
    assert libc.gettimeofday(tv_ref, None) == 0
    return tv.sec * 10**6 + tv.usec


def sys_gettimeofday() -> int:
    assert libc.syscall(SYS_GETTIMEOFDAY, tv_ref, None) == 0
    return tv.sec * 10**6 + tv.usec


def same() -> dict[str, list[int]]:
    out = {name: [lib_clock(c), sys_clock(c)] for name, c in CLOCKS.items()}
    out["gettimeofday"] = [lib_gettimeofday(), sys_gettimeofday()]
    out["time"] = [libc.time(None), libc.syscall(SYS_TIME, None)]
    return out


def spin(reads: list) -> int:
    """Virtual ns from the first read to the last of `reads` (callables), made in a row."""
    first = reads[0]()
    last = first
    for read in reads[1:]:
        last = read()
    return last - first


def main() -> None:
    mono = CLOCKS["monotonic"]
    # Each loop starts after a sleep: its first read is the task's first since a switch.
    results = {"same": same(), "spins": {}}
    lib = [lambda: lib_clock(mono)] * READS_IN_A_ROW
    syscall = [lambda: sys_clock(mono)] * READS_IN_A_ROW
    half = lib[: READS_IN_A_ROW // 2] + syscall[READS_IN_A_ROW // 2:]
    for name, reads in (("library", lib), ("syscall", syscall), ("half_and_half", half)):
        time.sleep(0.1)
        results["spins"][name] = spin(reads)
    with open(sys.argv[1], "w") as fh:
        json.dump(results, fh)


if __name__ == "__main__":
    main()
