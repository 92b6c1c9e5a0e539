"""The guest's vDSO clock (kernel/uml/patches/0008): a clock read answered without a system call
returns what the system call returns, costs virtual time exactly where the system call did (a task
that spins on the clock), and makes no system call while the task does not spin."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import CHECKOUT

pytestmark = [pytest.mark.uml]

PROBE = "tests/integration/guest_clock_probe.py"
CHARGE_NS = 256                       # what a read costs once a task spins (patch 0007)
FREE_READS = 100_000


@pytest.fixture(scope="module")
def uml_kernel():
    from testbed import uml_kernel
    return uml_kernel.ensure()


def in_guest(kernel, tmp_path: Path, job: str) -> Path:
    from testbed import uml
    share = tmp_path / "share"
    share.mkdir()
    run = uml.run(["sh", "-c", job], share=share, cwd=Path("/"), env={}, seed=3, kernel=kernel,
                  checkout=CHECKOUT)
    assert run.rc == 0, (share / uml.CONSOLE).read_text()[-3000:]
    return share


def test_a_library_clock_read_is_the_system_calls_and_costs_what_it_cost(uml_kernel, tmp_path):
    from testbed import uml
    share = in_guest(uml_kernel, tmp_path,
                     f"python3 {uml.GUEST_CHECKOUT}/{PROBE} {uml.GUEST_SHARE}/clock.json")
    seen = json.loads((share / "clock.json").read_text())
    for clock, (library, syscall) in seen["same"].items():
        assert library == syscall, f"{clock}: the library read {library}, the system call {syscall}"
    spins = seen["spins"]
    assert spins["library"] == spins["syscall"] == spins["half_and_half"], spins
    # read k > FREE_READS of a spinning task returns the clock CHARGE_NS later than read k - 1 (the
    # loop's 150 000 reads, and the few time.sleep() made after its wake-up, counted before them)
    charged = (150_000 - FREE_READS) * CHARGE_NS
    assert charged <= spins["library"] <= charged + 10 * CHARGE_NS, spins


def test_a_task_that_does_not_spin_reads_the_clock_without_a_system_call(uml_kernel, tmp_path):
    from testbed import uml
    # strace: config/test-packages.txt (the guest runs the host's programs)
    loop = "import time\nfor _ in range(1000): time.monotonic_ns(); time.time_ns()"
    share = in_guest(uml_kernel, tmp_path,
                     f"strace -f -o {uml.GUEST_SHARE}/trace.txt -e trace=clock_gettime,gettimeofday,time "
                     f"python3 -c '{loop}'")
    calls = [line for line in (share / "trace.txt").read_text().splitlines() if "(" in line]
    # 2000 reads in the loop; the interpreter's start reads the clock a few times more
    assert len(calls) < 50, f"{len(calls)} clock system calls for 2000 reads:\n" + "\n".join(calls[:20])
