"""The VM lane's lane.json names its VM by pid, start time and host boot: a stale record whose pid
now belongs to an unrelated process must neither count as the VM nor get that process killed."""
from __future__ import annotations

import json
import subprocess
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from testbed.process_groups import host_boot_id, proc_stat
from testbed.shared_vm import SharedVM, VMInfo


@pytest.fixture
def bystander():
    """An unrelated process leading its own process group, as a shell job does."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def stale_record(checkout: Path, pid: int, start_ticks: int, host_boot: str) -> SharedVM:
    state = checkout / "results" / ".vm"
    (state / "boot-1" / "jobs").mkdir(parents=True)
    info = VMInfo(pid=pid, start_ticks=start_ticks, boot_id="1", kernel="/nonexistent", release="6.1",
                    accel="tcg", launched_at=time.time() - 3600, boot_dir=str(state / "boot-1"),
                    ready={"release": "6.1"}, host_boot=host_boot)
    (state / "lane.json").write_text(json.dumps(asdict(info)))
    return SharedVM(checkout)


@pytest.mark.parametrize("which", ["reused pid", "earlier host boot"])
def test_a_stale_record_does_not_touch_the_process_that_now_has_its_pid(tmp_path, bystander, which) -> None:
    ticks = proc_stat(bystander.pid)[1]
    if which == "reused pid":
        lane = stale_record(tmp_path, bystander.pid, ticks - 1, host_boot_id())
    else:
        lane = stale_record(tmp_path, bystander.pid, ticks, "00000000-0000-0000-0000-000000000000")
    assert lane.status() is None                          # not taken for a running VM
    assert lane.stop() is False                           # nothing of ours was running
    assert bystander.poll() is None, "the unrelated process was killed"
    assert not (tmp_path / "results" / ".vm" / "lane.json").exists()
